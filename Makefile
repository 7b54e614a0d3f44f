# edgerag — `make demo` runs the demo, `make test` runs every test layer (installing what it needs).

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# Build outputs live outside the clone so every build (and CI on this machine) reuses them.
export CARGO_TARGET_DIR ?= $(HOME)/.cache/edgerag/target
CARGO ?= cargo
EDGERAG := $(CARGO_TARGET_DIR)/release/edgerag
# The benchmark harness (the workspace crate in bench/, not a default member).
BENCH := $(CARGO_TARGET_DIR)/release/edgerag-bench
# Real judged data (../shared/data next to the clone); override to point elsewhere.
export EDGERAG_DATA ?= $(abspath $(CURDIR)/../shared/data)
DEMO_BUNDLE := $(CARGO_TARGET_DIR)/demo/demo.bundle
# The same chunks and vectors in format 3 (read whole, with the HNSW graph), for what compares
# the formats or needs a bundle in memory: the wasm parity test and the benchmarks.
DEMO_BUNDLE_V3 := $(CARGO_TARGET_DIR)/demo/demo-v3.bundle
DEMO_QUESTION := Who was the leader of the Norse raiders who settled Normandy?
DEMO_PORT ?= 8080
WASM_PROFILE := wasm-release

.PHONY: help
help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

.PHONY: setup
setup: ## Install what the build and tests need (idempotent)
	scripts/setup.sh rust

.PHONY: test
test: setup lint test-native test-wasm test-web test-browser test-worker test-fuzz eval-check ## Run every test layer
	@echo "make test: all layers passed"

.PHONY: lint
lint: ## rustfmt (the workspace and the fuzz crate, which is outside it) and clippy (warnings are errors)
	$(CARGO) fmt --all -- --check
	$(CARGO) fmt --manifest-path fuzz/Cargo.toml -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	$(CARGO) clippy -p edgerag-core --lib --no-default-features --locked -- -D warnings

.PHONY: models
models: cli ## Fetch the embedding model (all-MiniLM-L6-v2) and the chat model (SmolLM2-135M-Instruct) into the cache, verified
	$(EDGERAG) models fetch
	$(EDGERAG) models fetch --chat

.PHONY: test-native
test-native: models ## Unit, integration and doc tests of every crate (native)
	scripts/setup.sh static-server
	$(CARGO) test --workspace --all-targets --locked
	$(CARGO) test --doc --locked -p edgerag-core

.PHONY: wasm
wasm: ## Build edgerag-core and the wasm crate for wasm32 (+simd128)
	scripts/wasm.sh --locked --profile $(WASM_PROFILE) -p edgerag-core -p edgerag-wasm

WASM_PKG := $(CARGO_TARGET_DIR)/wasm-pkg
WASM_WEB_PKG := $(CARGO_TARGET_DIR)/wasm-pkg-web

.PHONY: wasm-web
wasm-web: wasm ## The wasm module bound for browsers (ESM)
	scripts/setup.sh wasm-bindgen
	scripts/wasm-bindgen.sh $(WASM_PROFILE) web $(WASM_WEB_PKG)

.PHONY: demo-bundle
demo-bundle: models ## Build the demo bundle (with embeddings) from demo/corpus, and the same in format 3
	@mkdir -p $(dir $(DEMO_BUNDLE))
	$(EDGERAG) build demo/corpus -o $(DEMO_BUNDLE) --name demo
	$(EDGERAG) build demo/corpus -o $(DEMO_BUNDLE_V3) --name demo --format 3 --update $(DEMO_BUNDLE)

.PHONY: test-wasm
test-wasm: wasm demo-bundle models ## The real wasm module under Node: embedding, search, answer, build parity with native, local generation
	scripts/setup.sh wasm-bindgen
	scripts/wasm-bindgen.sh $(WASM_PROFILE) nodejs $(WASM_PKG)
	EDGERAG_WASM_PKG=$(WASM_PKG) EDGERAG_MODEL_DIR="$$($(EDGERAG) models path)" \
	  EDGERAG_CHAT_MODEL="$$($(EDGERAG) models path --chat)" \
	  EDGERAG_BIN=$(EDGERAG) EDGERAG_BUNDLE=$(DEMO_BUNDLE) EDGERAG_BUNDLE_V3=$(DEMO_BUNDLE_V3) node --test wasm/tests/

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

# SciFact with embeddings, built once (~25 min on 2 cores) for the benchmarks' real vectors.
SCIFACT_BUNDLE := $(CARGO_TARGET_DIR)/bench/scifact.bundle
$(SCIFACT_BUNDLE): | models
	@mkdir -p $(dir $@)
	$(EDGERAG) eval beir "$(EDGERAG_DATA)/scifact" --split train --mode bm25 --save-bundle $@

.PHONY: bench
bench: wasm www demo-bundle models $(SCIFACT_BUNDLE) ## Side by side with the alternatives (onnxruntime-web, transformers.js, bm25s, tantivy), search at 1k-100k chunks native and wasm, cold start, local generation: writes docs/BENCHMARKS.md (~22 min; the first run also embeds SciFact, ~25 min)
	scripts/setup.sh wasm-bindgen bench browser
	scripts/wasm-bindgen.sh $(WASM_PROFILE) nodejs $(WASM_PKG)
	$(CARGO) build --release --locked -p edgerag-cli -p edgerag-bench
	$(BENCH) --wasm-pkg $(WASM_PKG) --peers bench --scifact "$(EDGERAG_DATA)/scifact" \
	  --scifact-bundle $(SCIFACT_BUNDLE) --bundle $(DEMO_BUNDLE_V3) --site www/dist \
	  --question "$(DEMO_QUESTION)" --chat-model local --report docs $(BENCH_ARGS)

.PHONY: demo
demo: demo-bundle www ## Build the demo bundle, search it and ask it, then serve the demo site
	$(EDGERAG) inspect $(DEMO_BUNDLE)
	@while IFS= read -r query; do \
	  echo; echo "── edgerag search demo.bundle \"$$query\" -k 3 ──"; \
	  $(EDGERAG) search $(DEMO_BUNDLE) "$$query" -k 3; \
	done < demo/queries.txt
	@echo; echo "── edgerag ask demo.bundle \"$(DEMO_QUESTION)\" ──"
	$(EDGERAG) ask $(DEMO_BUNDLE) "$(DEMO_QUESTION)"
	@echo; echo "── the demo site: open the URL below (Ctrl-C stops it) ──"
	$(EDGERAG) serve $(DEMO_BUNDLE) --site www/dist --port $(DEMO_PORT) --local-model local

.PHONY: fmt
fmt: ## Format the code
	$(CARGO) fmt --all

# ── Fuzzing (fuzz/, cargo-fuzz + libFuzzer; see docs/RELIABILITY.md) ──

FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?=

.PHONY: fuzz
fuzz: models ## Every fuzz target for FUZZ_SECONDS (600) each (FUZZ_TARGETS picks some); adds the time to docs/fuzzing.json and docs/RELIABILITY.md
	scripts/setup.sh fuzz
	scripts/fuzz.sh --seconds $(FUZZ_SECONDS) --record --minimize $(FUZZ_TARGETS)

.PHONY: test-fuzz
test-fuzz: models ## Every fuzz target for 20 s on its saved corpus (regressions)
	scripts/setup.sh fuzz
	scripts/fuzz.sh --seconds 20 $(FUZZ_TARGETS)

# ── The browser: the npm package (web/), the demo site (www/), their tests under Node and in Chromium ──

.PHONY: web
web: wasm-web ## The npm package @edgerag/web in web/dist, with the wasm module
	scripts/setup.sh node
	EDGERAG_WASM_WEB_PKG=$(WASM_WEB_PKG) npm run build --workspace web

.PHONY: test-web
test-web: ## The npm package's fetcher and connection under Node, without the wasm module: downloads, cache, SHA-256, errors, calls to the worker
	scripts/setup.sh node
	node_modules/.bin/tsc -p web/tests/tsconfig.json
	node --test web/tests/

.PHONY: www
www: web ## The demo site in www/dist (serve it: edgerag serve BUNDLE --site www/dist)
	npm run build --workspace www

.PHONY: test-browser
test-browser: www demo-bundle models ## The demo site in headless Chromium: load, ask, build in the tab, cache, LLM, answer locally
	scripts/setup.sh browser
	EDGERAG=$(EDGERAG) EDGERAG_DEMO_BUNDLE=$(DEMO_BUNDLE) \
	  EDGERAG_ARTIFACTS=$(CARGO_TARGET_DIR)/artifacts/browser node --test www/tests/

# ── At the edge: the Cloudflare Worker (worker/, wrangler.toml) on workerd ──

WORKER_MODEL := worker/assets/models/all-MiniLM-L6-v2-q8_0.gguf
WRANGLER := worker/node_modules/.bin/node worker/node_modules/wrangler/bin/wrangler.js

.PHONY: worker
worker: ## The Worker in worker/build (wrangler.toml's main), built with the local wasm-bindgen; prints its gzipped size
	scripts/worker.sh $(WASM_PROFILE)

.PHONY: worker-assets
worker-assets: demo-bundle cli ## The demo bundle and the quantized model in worker/assets, the Worker's static assets
	@mkdir -p worker/assets/bundles worker/assets/models
	cp $(DEMO_BUNDLE) worker/assets/bundles/.demo.bundle.tmp
	mv worker/assets/bundles/.demo.bundle.tmp worker/assets/bundles/demo.bundle
	$(EDGERAG) models quantize -o $(WORKER_MODEL)

.PHONY: test-worker
test-worker: worker worker-assets ## The Worker on workerd: every endpoint over HTTP, parity with native, SSE, errors
	scripts/setup.sh worker
	EDGERAG=$(EDGERAG) EDGERAG_DEMO_BUNDLE=$(DEMO_BUNDLE) EDGERAG_QUANTIZED_MODEL=$(WORKER_MODEL) \
	  node --test --test-concurrency=1 worker/tests/

.PHONY: worker-dev
worker-dev: worker worker-assets ## Run the Worker locally on workerd at http://127.0.0.1:8787 (Ctrl-C stops it)
	scripts/setup.sh worker
	WRANGLER_SEND_METRICS=false $(WRANGLER) dev --ip 127.0.0.1 --port 8787

.PHONY: bench-worker
bench-worker: worker worker-assets ## Load test of the Worker on workerd: 30 s, 8 connections; requests/s, p50/p99, errors, memory
	@mkdir -p $(CARGO_TARGET_DIR)/bench
	scripts/setup.sh worker
	worker/node_modules/.bin/node worker/bench/load.mjs --endpoint search --json $(CARGO_TARGET_DIR)/bench/worker-search.json $(BENCH_WORKER_ARGS)
	worker/node_modules/.bin/node worker/bench/load.mjs --endpoint ask --concurrency 1 --json $(CARGO_TARGET_DIR)/bench/worker-ask.json $(BENCH_WORKER_ARGS)
