.PHONY: train demo test bench
# the main job: train the example LSTM forecaster into the embedded store ./.scellis
train:
	bash scripts/setup.sh
	XDG_RUNTIME_DIR=$${XDG_RUNTIME_DIR:-/tmp} .venv/bin/scellis train examples/lstm_forecaster.sml --device auto
demo:
	bash scripts/setup.sh
	XDG_RUNTIME_DIR=$${XDG_RUNTIME_DIR:-/tmp} .venv/bin/scellis demo
test:
	bash scripts/test.sh
bench:
	bash scripts/setup.sh
	XDG_RUNTIME_DIR=$${XDG_RUNTIME_DIR:-/tmp} .venv/bin/python bench/train_step.py
	XDG_RUNTIME_DIR=$${XDG_RUNTIME_DIR:-/tmp} .venv/bin/python bench/dispatch.py
