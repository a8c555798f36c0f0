"""What the PostgreSQL history and day ledger share: connecting, the server check, our schema's guard.

- psycopg is imported here, lazily, and only when a postgresql:// URL is used: a user who sets no
  URL never needs it, and plugin load never imports it.
- Every failure becomes one error (the caller's class) naming the server by its redacted URL and
  saying how to fix it; the password is also scrubbed from the driver's own text.
- Each store keeps its tables in a schema of its own (`agentevals_history`, `agentevals_ledger`).
  Before anything is written, the schema is compared with what we create: any other relation (a
  view, a foreign table, a table of its own), a trigger, a rule, a row-level policy or a function
  in it is refused by name. A trigger could rewrite failures as passes or hang every session; a
  policy could hide rows from a verdict.
- Every connection runs with `search_path = pg_catalog, pg_temp` and every name is qualified, so
  an object elsewhere in the database can never stand in for ours.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .errors import AgentEvalsError
from .settings.dburl import DatabaseURL

if TYPE_CHECKING:
    import psycopg

MIN_SERVER_VERSION = 120000  # PostgreSQL 12: the oldest release still supported when this was written
CONNECT_TIMEOUT = 10
INSTALL = "pip install 'pytest-agentevals[postgresql]'"

ErrorClass = Callable[[str], AgentEvalsError]


def load_driver(url: DatabaseURL, error: ErrorClass) -> Any:
    try:
        import psycopg
    except ImportError:
        raise error(f"{url}: a PostgreSQL URL needs the psycopg driver; {INSTALL}") from None
    return psycopg


def scrub(text: str, url: DatabaseURL) -> str:
    """The driver's message without the URL's password, should it quote it."""
    from urllib.parse import unquote, urlsplit

    password = urlsplit(url.url).password
    text = text.strip().replace(url.url, str(url))
    if password:
        text = text.replace(password, "***").replace(unquote(password), "***")
    return " ".join(text.split())


def connection_fix(problem: str) -> str:
    """What to do about a failed connection, from the driver's message."""
    lowered = problem.lower()
    if "password" in lowered or "authentication" in lowered:
        return "check the user and password in the URL (the CI secret that holds it)"
    if "does not exist" in lowered:
        return "create the database (createdb NAME) or fix its name in the URL"
    if "refused" in lowered or "timeout" in lowered or "could not" in lowered or "no route" in lowered:
        return "start the server, or fix the host and port in the URL"
    return "fix the URL (docs/history.md, 'URL forms')"


def connect(url: DatabaseURL, error: ErrorClass, *, what: str) -> psycopg.Connection[Any]:
    """An autocommit connection to the server at `url`, checked to be a version we support."""
    driver = load_driver(url, error)
    try:
        conn: psycopg.Connection[Any] = driver.connect(
            url.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT, application_name="agentevals"
        )
    except driver.Error as exc:
        problem = scrub(str(exc), url)
        raise error(
            f"{url}: cannot connect to the {what} database ({problem}); nothing was written; "
            + connection_fix(problem)
        ) from None
    except Exception as exc:  # a URL libpq cannot parse: ProgrammingError, ValueError...
        raise error(
            f"{url}: is not a usable PostgreSQL URL ({scrub(str(exc), url)}); nothing was written; "
            "fix the URL (docs/history.md, 'URL forms')"
        ) from None
    try:
        conn.execute("SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false)")
        version = conn.info.server_version
        if version < MIN_SERVER_VERSION:
            raise error(
                f"{url}: the server runs PostgreSQL {_release(version)}, and the {what} needs "
                f"{_release(MIN_SERVER_VERSION)} or newer; nothing was written; upgrade the server, or "
                "point the setting at another one"
            )
    except BaseException:
        conn.close()
        raise
    return conn


def _release(version: int) -> str:
    return f"{version // 10000}" if version >= 100000 else f"{version // 10000}.{version // 100 % 100}"


def foreign_objects(
    conn: psycopg.Connection[Any], schema: str, tables: Iterable[str], relations: Iterable[str]
) -> list[str]:
    """What our `schema` holds beyond `relations` (our tables, their indexes and sequences): each as
    'a KIND NAME', in a stable order. Reading the catalog runs nothing."""
    kinds = {
        "r": "table",
        "p": "partitioned table",
        "v": "view",
        "m": "materialized view",
        "f": "foreign table",
        "i": "index",
        "I": "index",
        "S": "sequence",
        "c": "type",
    }
    found: list[str] = []
    ours = set(relations)
    for name, kind in conn.execute(
        "SELECT c.relname, c.relkind::text FROM pg_catalog.pg_class c "
        "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s ORDER BY c.relname",
        (schema,),
    ):
        if name not in ours:
            found.append(f"a {kinds.get(kind, 'relation')} {name!r}")
    table_names = list(tables)
    for (name,) in conn.execute(
        "SELECT t.tgname FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid "
        "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND NOT t.tgisinternal ORDER BY t.tgname",
        (schema,),
    ):
        found.append(f"a trigger {name!r}")
    for (name,) in conn.execute(
        "SELECT r.rulename FROM pg_catalog.pg_rewrite r JOIN pg_catalog.pg_class c ON c.oid = r.ev_class "
        "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = ANY(%s) ORDER BY r.rulename",
        (schema, table_names),
    ):
        found.append(f"a rule {name!r}")
    for (name,) in conn.execute(
        "SELECT p.polname FROM pg_catalog.pg_policy p JOIN pg_catalog.pg_class c ON c.oid = p.polrelid "
        "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s ORDER BY p.polname",
        (schema,),
    ):
        found.append(f"a row-level policy {name!r}")
    for (name,) in conn.execute(
        "SELECT p.proname FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = %s ORDER BY p.proname",
        (schema,),
    ):
        found.append(f"a function {name!r}")
    return found


def schema_version(conn: psycopg.Connection[Any], schema: str, table: str = "meta") -> int | None:
    """The version our `table` (a key/value table in our schema) records; None when the schema or the
    table is missing; -1 when the table is there and says nothing we wrote."""
    # A plain catalog query, not to_regclass(): that reads the backend's catalog cache, which waiting
    # on an advisory lock does not refresh, so it would miss a schema another job just committed.
    row = conn.execute(
        "SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = %s AND c.relkind = 'r'",
        (schema, table),
    ).fetchone()
    if row is None:
        return None
    found = conn.execute(f"SELECT value FROM {schema}.{table} WHERE key = 'schema_version'").fetchone()
    try:
        return int(found[0]) if found else -1
    except (TypeError, ValueError):
        return -1
