"""The PostgreSQL day ledger's schema as the catalog describes it once its migrations ran (`pg.describe`, read
under our pinned search path): what `agentevals_ledger` must hold, no more, no less, no other definition.
tests/test_pg.py checks that a freshly migrated schema reads exactly so; a migration that changes the
schema changes this table in the same commit."""

from __future__ import annotations

# ruff: noqa: E501 - each definition as the server prints it, one per line

EXPECTED: dict[str, str] = {
    "column days.calls": "bigint NOT NULL DEFAULT 0",
    "column days.day": "date NOT NULL",
    "column days.last_grant": "double precision",
    "column days.reaped_usd": "double precision NOT NULL DEFAULT 0",
    "column days.reserved_usd": "double precision NOT NULL DEFAULT 0",
    "column days.runs": "bigint NOT NULL DEFAULT 0",
    "column days.spent_usd": "double precision NOT NULL DEFAULT 0",
    "column days.tripped_at": "timestamp with time zone",
    "column days.tripped_limit": "double precision",
    "column days.tripped_run": "text",
    "column holdings.backend": "integer NOT NULL",
    "column holdings.backend_start": "timestamp with time zone",
    "column holdings.day": "date NOT NULL",
    "column holdings.host": "text NOT NULL",
    "column holdings.pid": "integer NOT NULL",
    "column holdings.run_id": "text NOT NULL",
    "column holdings.usd": "double precision NOT NULL",
    "column leases.day": "date NOT NULL",
    "column leases.granted": "double precision",
    "column leases.lease": "bigint NOT NULL",
    "column leases.reserved": "double precision",
    "column leases.run_id": "text NOT NULL",
    "column leases.spent": "double precision",
    "column meta.key": "text NOT NULL",
    "column meta.value": "text NOT NULL",
    "constraint days.days_pkey": "PRIMARY KEY (day)",
    "constraint days.days_spent_usd_check": "CHECK ((spent_usd >= (0)::double precision))",
    "constraint holdings.holdings_pkey": "PRIMARY KEY (run_id)",
    "constraint holdings.holdings_usd_check": "CHECK ((usd >= (0)::double precision))",
    "constraint leases.leases_pkey": "PRIMARY KEY (run_id, lease)",
    "constraint meta.meta_pkey": "PRIMARY KEY (key)",
    "index days_pkey": "CREATE UNIQUE INDEX days_pkey ON agentevals_ledger.days USING btree (day)",
    "index holdings_pkey": "CREATE UNIQUE INDEX holdings_pkey ON agentevals_ledger.holdings USING btree (run_id)",
    "index leases_pkey": "CREATE UNIQUE INDEX leases_pkey ON agentevals_ledger.leases USING btree (run_id, lease)",
    "index meta_pkey": "CREATE UNIQUE INDEX meta_pkey ON agentevals_ledger.meta USING btree (key)",
    "relation days": "table",
    "relation days_pkey": "index",
    "relation holdings": "table",
    "relation holdings_pkey": "index",
    "relation leases": "table",
    "relation leases_pkey": "index",
    "relation meta": "table",
    "relation meta_pkey": "index",
}
