"""The durable per-user ledger: its API, SQLite and PostgreSQL stores and the signed hash chain."""
