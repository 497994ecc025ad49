"""What the browser worker calls (webapp layer): pure-Python entry points for the tab."""
