"""The tests' throw-away PostgreSQL server answers, through the driver CYOA will use
(SQLAlchemy Core on psycopg 3), at a URL that ``CYOA_DATABASE`` accepts."""

from __future__ import annotations

import sqlalchemy as sa

from cyoa.database_url import parse_database


def test_the_test_server_round_trips_a_row_through_sqlalchemy_and_psycopg(postgres_url):
    location = parse_database(postgres_url)
    assert location.kind == "postgresql"
    engine = sa.create_engine(location.url)
    events = sa.Table(
        "events",
        sa.MetaData(),
        sa.Column("session_id", sa.Text, primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("payload", sa.Text, nullable=False),
    )
    try:
        with engine.begin() as conn:
            events.metadata.create_all(conn)
            conn.execute(events.insert(), {"session_id": "s1", "seq": 1, "payload": "Élan — 🐉"})
        with engine.connect() as conn:
            rows = conn.execute(sa.select(events)).all()
            version = conn.execute(sa.text("SHOW server_version_num")).scalar_one()
    finally:
        engine.dispose()
    assert [tuple(row) for row in rows] == [("s1", 1, "Élan — 🐉")]
    assert int(version) >= 150000


def test_each_test_gets_its_own_empty_database(postgres_url):
    engine = sa.create_engine(parse_database(postgres_url).url)
    try:
        with engine.connect() as conn:
            tables = conn.execute(
                sa.text("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
            ).scalar_one()
    finally:
        engine.dispose()
    assert tables == 0
