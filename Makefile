.PHONY: demo test bench
demo:
	bash scripts/setup.sh
	XDG_RUNTIME_DIR=$${XDG_RUNTIME_DIR:-/tmp} .venv/bin/scellis demo
test:
	bash scripts/test.sh
bench:
	bash scripts/setup.sh
	XDG_RUNTIME_DIR=$${XDG_RUNTIME_DIR:-/tmp} .venv/bin/python bench/run.py
