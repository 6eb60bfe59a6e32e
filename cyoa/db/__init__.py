"""One data-access layer for SQLite and PostgreSQL (see README.md in this folder): the engine
for a ``CYOA_DATABASE`` setting, the ``Db`` object the code reads and writes through, write
transactions with named locks, and the schema as SQLAlchemy MetaData."""
