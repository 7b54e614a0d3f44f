# edgerag — `make demo` runs the demo, `make test` runs every test layer (installing what it needs).

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# Build outputs live outside the clone so every build (and CI on this machine) reuses them.
export CARGO_TARGET_DIR ?= $(HOME)/.cache/edgerag/target
CARGO ?= cargo
EDGERAG := $(CARGO_TARGET_DIR)/release/edgerag
# Real judged data (../shared/data next to the clone); override to point elsewhere.
export EDGERAG_DATA ?= $(abspath $(CURDIR)/../shared/data)
DEMO_BUNDLE := $(CARGO_TARGET_DIR)/demo/demo.bundle
DEMO_QUESTION := Who was the leader of the Norse raiders who settled Normandy?
WASM_PROFILE := wasm-release

.PHONY: help
help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

.PHONY: setup
setup: ## Install what the build and tests need (idempotent)
	scripts/setup.sh rust

.PHONY: test
test: setup lint test-native test-wasm eval-check ## Run every test layer
	@echo "make test: all layers passed"

.PHONY: lint
lint: ## rustfmt and clippy (warnings are errors)
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

.PHONY: models
models: cli ## Fetch the embedding model (all-MiniLM-L6-v2) into the cache, verified
	$(EDGERAG) models fetch

.PHONY: test-native
test-native: models ## Unit, integration and doc tests of every crate (native)
	$(CARGO) test --workspace --all-targets --locked
	$(CARGO) test --doc --locked -p edgerag-core

.PHONY: wasm
wasm: ## Build edgerag-core and the wasm crate for wasm32 (+simd128)
	scripts/wasm.sh --locked --profile $(WASM_PROFILE) -p edgerag-core -p edgerag-wasm

WASM_PKG := $(CARGO_TARGET_DIR)/wasm-pkg

.PHONY: test-wasm
test-wasm: wasm models ## The real wasm build under Node: embedding parity with sentence-transformers
	scripts/setup.sh wasm-bindgen
	scripts/wasm-bindgen.sh $(WASM_PROFILE) nodejs $(WASM_PKG)
	EDGERAG_WASM_PKG=$(WASM_PKG) EDGERAG_MODEL_DIR="$$($(EDGERAG) models path)" node --test wasm/tests/

.PHONY: cli
cli: ## Build the edgerag CLI (release)
	$(CARGO) build --release --locked -p edgerag-cli

.PHONY: eval-check
eval-check: models ## SciFact BM25 must reach nDCG@10 >= 0.64 (skipped without ../shared/data)
	scripts/eval-check.sh $(EDGERAG) "$(EDGERAG_DATA)"

.PHONY: eval
eval: models ## Every mode on SciFact (train) and MuSiQue, with embeddings (SciFact: ~25 min)
	$(EDGERAG) eval beir "$(EDGERAG_DATA)/scifact" --split train --mode all
	$(EDGERAG) eval multihop "$(EDGERAG_DATA)/musique" --mode all

.PHONY: bench
bench: wasm models ## Embedding native vs wasm, search latency at 10k/100k chunks, HNSW recall (~15 min)
	scripts/setup.sh wasm-bindgen
	scripts/wasm-bindgen.sh $(WASM_PROFILE) nodejs $(WASM_PKG)
	@mkdir -p $(dir $(DEMO_BUNDLE))
	$(EDGERAG) build demo/corpus -o $(DEMO_BUNDLE) --name demo
	$(EDGERAG) bench --bundle $(DEMO_BUNDLE) --wasm-pkg $(WASM_PKG) $(BENCH_ARGS)

.PHONY: demo
demo: models ## Build the demo bundle (with embeddings) from demo/corpus, search it and ask it
	@mkdir -p $(dir $(DEMO_BUNDLE))
	$(EDGERAG) build demo/corpus -o $(DEMO_BUNDLE) --name demo
	$(EDGERAG) inspect $(DEMO_BUNDLE)
	@while IFS= read -r query; do \
	  echo; echo "── edgerag search demo.bundle \"$$query\" -k 3 ──"; \
	  $(EDGERAG) search $(DEMO_BUNDLE) "$$query" -k 3; \
	done < demo/queries.txt
	@echo; echo "── edgerag ask demo.bundle \"$(DEMO_QUESTION)\" ──"
	$(EDGERAG) ask $(DEMO_BUNDLE) "$(DEMO_QUESTION)"

.PHONY: fmt
fmt: ## Format the code
	$(CARGO) fmt --all
