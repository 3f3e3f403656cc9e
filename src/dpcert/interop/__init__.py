"""Certificates for other libraries' objects, with each library's own meaning."""
