// Entry module of the edgerag Worker: wraps the wasm-bindgen output (./index.js, generated with
// `--target module --experimental-reset-state-function --force-enable-abort-handler`) in a
// WorkerEntrypoint. A reduced copy of worker-build 0.8.7's shim (src/js/shim.js): only the
// fetch handler, no Durable Object class proxies.
import { WorkerEntrypoint } from "cloudflare:workers";
import * as wasm from "./index.js";

// Set by workers-rs' panic hook; the wasm instance is rebuilt before the next call.
const initState = wasm.__worker_init_state();

function checkReinitialize() {
  if (initState.criticalError) {
    console.log("edgerag: reinitializing the wasm instance after a panic");
    wasm.__wbg_reset_state();
    initState.criticalError = false;
    initState.instanceId++;
  }
}

export default class extends WorkerEntrypoint {
  async fetch(request) {
    checkReinitialize();
    try {
      return await wasm.fetch(request, this.env, this.ctx);
    } catch (e) {
      if (e instanceof WebAssembly.RuntimeError) initState.criticalError = true;
      throw e;
    }
  }
}
