"""`lagscale produce` (placeholder; owned by the load generator)."""
