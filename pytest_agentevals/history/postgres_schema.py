"""The PostgreSQL history's schema as the catalog describes it once its migrations ran (`pg.describe`, read
under our pinned search path): what `agentevals_history` must hold, no more, no less, no other definition.
tests/test_pg.py checks that a freshly migrated schema reads exactly so; a migration that changes the
schema changes this table in the same commit, and keeps the catalog of each older version it migrates
from in `OLDER` (an older schema is checked against its own catalog before it is migrated)."""

from __future__ import annotations

# ruff: noqa: E501 - each definition as the server prints it, one per line

EXPECTED: dict[str, str] = {
    "column attempts.attempt": "integer NOT NULL",
    "column attempts.duration": "double precision NOT NULL",
    "column attempts.id": "bigint NOT NULL GENERATED ALWAYS AS IDENTITY",
    "column attempts.outcome": "text NOT NULL",
    "column attempts.source": "bigint NOT NULL",
    "column attempts.test": "bigint NOT NULL",
    "column attempts.worker": "text",
    "column meta.key": "text NOT NULL",
    "column meta.value": "text NOT NULL",
    "column sources.branch": "text",
    "column sources.created": "double precision NOT NULL",
    "column sources.excluded": "text",
    "column sources.id": "bigint NOT NULL GENERATED ALWAYS AS IDENTITY",
    "column sources.key": "text NOT NULL",
    "column sources.kind": "text NOT NULL",
    "column sources.path": "text",
    "column sources.run_id": "text NOT NULL",
    "column sources.sha": "text",
    "column tests.id": "bigint NOT NULL GENERATED ALWAYS AS IDENTITY",
    "column tests.layer": "text NOT NULL",
    "column tests.test_id": "text NOT NULL",
    "column tests.variant": "text NOT NULL",
    "constraint attempts.attempts_outcome_check": "CHECK ((outcome = ANY (ARRAY['passed'::text, 'failed'::text, 'error'::text, 'skipped'::text, 'budget_stopped'::text])))",
    "constraint attempts.attempts_pkey": "PRIMARY KEY (id)",
    "constraint attempts.attempts_source_fkey": "FOREIGN KEY (source) REFERENCES agentevals_history.sources(id)",
    "constraint attempts.attempts_test_fkey": "FOREIGN KEY (test) REFERENCES agentevals_history.tests(id)",
    "constraint meta.meta_pkey": "PRIMARY KEY (key)",
    "constraint sources.sources_key_key": "UNIQUE (key)",
    "constraint sources.sources_pkey": "PRIMARY KEY (id)",
    "constraint tests.tests_pkey": "PRIMARY KEY (id)",
    "constraint tests.tests_test_id_variant_layer_key": "UNIQUE (test_id, variant, layer)",
    "index attempts_pkey": "CREATE UNIQUE INDEX attempts_pkey ON agentevals_history.attempts USING btree (id)",
    "index attempts_source": "CREATE INDEX attempts_source ON agentevals_history.attempts USING btree (source)",
    "index meta_pkey": "CREATE UNIQUE INDEX meta_pkey ON agentevals_history.meta USING btree (key)",
    "index sources_key_key": "CREATE UNIQUE INDEX sources_key_key ON agentevals_history.sources USING btree (key)",
    "index sources_pkey": "CREATE UNIQUE INDEX sources_pkey ON agentevals_history.sources USING btree (id)",
    "index tests_pkey": "CREATE UNIQUE INDEX tests_pkey ON agentevals_history.tests USING btree (id)",
    "index tests_test_id_variant_layer_key": "CREATE UNIQUE INDEX tests_test_id_variant_layer_key ON agentevals_history.tests USING btree (test_id, variant, layer)",
    "relation attempts": "table",
    "relation attempts_id_seq": "sequence",
    "relation attempts_pkey": "index",
    "relation attempts_source": "index",
    "relation meta": "table",
    "relation meta_pkey": "index",
    "relation sources": "table",
    "relation sources_id_seq": "sequence",
    "relation sources_key_key": "index",
    "relation sources_pkey": "index",
    "relation tests": "table",
    "relation tests_id_seq": "sequence",
    "relation tests_pkey": "index",
    "relation tests_test_id_variant_layer_key": "index",
}


# The catalog of schema 1, before budget_stopped was an outcome: only the outcome's CHECK differs.
OLDER: dict[int, dict[str, str]] = {
    1: {
        **EXPECTED,
        "constraint attempts.attempts_outcome_check": "CHECK ((outcome = ANY (ARRAY['passed'::text, 'failed'::text, 'error'::text, 'skipped'::text])))",
    },
}
