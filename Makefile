# Every target does its own set-up on a fresh machine (system packages, virtual environment, package).
.PHONY: env demo test test-slow bench plot clean-env mutation

PYTEST := .venv/bin/python -m pytest

env:
	@bash tools/setup_env.sh

## make demo: chip inference on the bundled model and corpus; prints fidelity and energy.
demo: env
	.venv/bin/oscsim simulate
	.venv/bin/oscsim compare kuramoto-tiny --layer 0 --head 0 --plot results/demo
	@echo "plots of chip vs closed form (layer 0, head 0): results/demo/"

## make test: the default test suite (no `slow` tests), well under 20 minutes on 2 cores; prints the 10 slowest
## (each must stay under 20 s on a quiet machine, or be marked `slow`: CONTRIBUTING.md).
test: env
	$(PYTEST) -m "not slow" -q --durations=10 tests --nbmake notebooks

## make test-slow: the long tests only.
test-slow: env
	$(PYTEST) -m slow -q

## make plot: the Kuramoto synchronisation transition r(K), saved as a PNG.
plot: env
	.venv/bin/oscsim kuramoto-demo --out results/kuramoto

bench: env
	.venv/bin/oscsim bench integrator --json
	.venv/bin/oscsim bench attention --json
	.venv/bin/python benchmarks/devices.py --json

## make mutation: sampled mutation score of the core mapping/ and hw_models/ modules (slow; see BENCHMARKS.md).
mutation: env
	nice -n 19 .venv/bin/python benchmarks/mutation.py --sample 12 --seed 0

clean-env:
	rm -f .venv
