"""The command line (cli layer): imports only the public API."""
