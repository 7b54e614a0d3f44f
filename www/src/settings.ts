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
  readonly #insecure = byId("llm-insecure", HTMLParagraphElement);
  #settings = load();

  constructor() {
    this.#fill();
    this.#baseUrl.addEventListener("input", () => this.#checkTransport());
    this.#form.addEventListener("submit", (event) => {
      event.preventDefault();
      const enabled = this.#enabled.checked;
      this.#settings = {
        enabled,
        baseUrl: this.#baseUrl.value.trim(),
        model: this.#model.value.trim(),
        // With the LLM off the key is of no use: it is not kept on this device.
        apiKey: enabled ? this.#apiKey.value.trim() : "",
      };
      save(this.#settings);
      if (!enabled) this.#apiKey.value = "";
      this.#status.textContent = enabled
        ? `Saved: answers come from ${this.#settings.model}.`
        : "Saved: answers are extractive; no API key is stored.";
    });
    byId("llm-forget", HTMLButtonElement).addEventListener("click", () => {
      this.#settings = { ...this.#settings, apiKey: "" };
      save(this.#settings);
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
    this.#checkTransport();
  }

  /** Warns, in the page, when the base URL is plain http to another machine. */
  #checkTransport(): void {
    const insecure = plainHttpElsewhere(this.#baseUrl.value.trim());
    this.#insecure.hidden = !insecure;
    if (insecure) this.#baseUrl.setAttribute("aria-describedby", this.#insecure.id);
    else this.#baseUrl.removeAttribute("aria-describedby");
  }
}

/** Whether `url` is plain http to a host other than this device (loopback is not on a network). */
function plainHttpElsewhere(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false; // not a URL yet: the form refuses it
  }
  if (parsed.protocol !== "http:") return false;
  const host = parsed.hostname.toLowerCase();
  const loopback = host === "localhost" || host.endsWith(".localhost") || /^127(\.\d{1,3}){3}$/.test(host) || host === "[::1]";
  return !loopback;
}

function load(): LlmSettings {
  const stored = localStorage.getItem(STORAGE_KEY);
  if (stored === null) return DEFAULTS;
  try {
    const settings = { ...DEFAULTS, ...(JSON.parse(stored) as Partial<LlmSettings>) };
    if (!settings.enabled && settings.apiKey !== "") {
      // Saved by an earlier version, which kept the key with the LLM off: it goes now.
      settings.apiKey = "";
      save(settings);
    }
    return settings;
  } catch {
    return DEFAULTS; // unreadable settings are replaced at the next save
  }
}

function save(settings: LlmSettings): void {
  localStorage.setItem(STORAGE_KEY, JSON.stringify(settings));
}
