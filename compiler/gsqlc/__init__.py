"""gsqlc: a code-generating stream query compiler for GSQL (Gigascope / Tigon SQL)."""
__version__ = "0.1.0"
