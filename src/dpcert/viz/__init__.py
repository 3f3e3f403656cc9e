"""Pictures of certificates, ledgers and audits (matplotlib, the plot extra)."""
