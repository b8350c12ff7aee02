"""Layer 3: renderings of scans (JSON, Prometheus text, Nagios lines, Rich tables)."""
