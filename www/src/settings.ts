// The LLM settings panel. Everything stays on this device, in localStorage.
import type { LlmOptions } from "@edgerag/web";
import { byId } from "./dom.js";

const STORAGE_KEY = "edgerag.llm";
/** The core's defaults: Groq's OpenAI-compatible API and its first model. */
const DEFAULTS: LlmSettings = {
  enabled: false,
  baseUrl: "https://api.groq.com/openai/v1",
  model: "llama-3.3-70b-versatile",
  apiKey: "",
};

interface LlmSettings {
  enabled: boolean;
  baseUrl: string;
  model: string;
  apiKey: string;
}

export class SettingsPanel {
  readonly #form = byId("llm-form", HTMLFormElement);
  readonly #enabled = byId("llm-enabled", HTMLInputElement);
  readonly #baseUrl = byId("llm-base-url", HTMLInputElement);
  readonly #model = byId("llm-model", HTMLInputElement);
  readonly #apiKey = byId("llm-key", HTMLInputElement);
  readonly #status = byId("llm-status", HTMLParagraphElement);
  #settings = load();

  constructor() {
    this.#fill();
    this.#form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.#settings = {
        enabled: this.#enabled.checked,
        baseUrl: this.#baseUrl.value.trim(),
        model: this.#model.value.trim(),
        apiKey: this.#apiKey.value.trim(),
      };
      localStorage.setItem(STORAGE_KEY, JSON.stringify(this.#settings));
      this.#status.textContent = this.#settings.enabled
        ? `Saved: answers come from ${this.#settings.model}.`
        : "Saved: answers are extractive.";
    });
    byId("llm-forget", HTMLButtonElement).addEventListener("click", () => {
      this.#settings = { ...this.#settings, apiKey: "" };
      localStorage.setItem(STORAGE_KEY, JSON.stringify(this.#settings));
      this.#apiKey.value = "";
      this.#status.textContent = "The API key is forgotten: it is no longer stored on this device.";
    });
  }

  /** The LLM to answer with, or none for extractive answers. */
  llm(): LlmOptions | undefined {
    const { enabled, baseUrl, model, apiKey } = this.#settings;
    if (!enabled) return undefined;
    return { baseUrl, models: [model], ...(apiKey ? { apiKey } : {}) };
  }

  #fill(): void {
    this.#enabled.checked = this.#settings.enabled;
    this.#baseUrl.value = this.#settings.baseUrl;
    this.#model.value = this.#settings.model;
    this.#apiKey.value = this.#settings.apiKey;
  }
}

function load(): LlmSettings {
  const stored = localStorage.getItem(STORAGE_KEY);
  if (stored === null) return DEFAULTS;
  try {
    return { ...DEFAULTS, ...(JSON.parse(stored) as Partial<LlmSettings>) };
  } catch {
    return DEFAULTS; // unreadable settings are replaced at the next save
  }
}
