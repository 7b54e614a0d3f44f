/** The files an embedding model is made of, in the order the core takes them. */
export const MODEL_FILES = ["config.json", "tokenizer.json", "model.safetensors"] as const;

export type ModelFileName = (typeof MODEL_FILES)[number];

/** What is known of a file before downloading it: its SHA-256 (hex) and size in bytes. */
export interface FileSpec {
  sha256?: string;
  bytes?: number;
}

/** A GGUF chat model to generate with in the tab (`Edgerag.loadChatModel`). The page says
 * where it is: no default is downloaded from a third party. */
export interface ChatModelSpec extends FileSpec {
  /** The URL of the `.gguf` file (relative to the page). */
  url: string;
  /** The name answers carry (default: the file's `general.name`). */
  name?: string;
}

/** SmolLM2-135M-Instruct, Q4_1: the chat model edgerag is tested with (`edgerag models fetch
 * --chat` caches it; `edgerag serve --local-model local` serves it). */
export const SMOLLM2_135M: Readonly<Required<FileSpec>> = {
  sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
  bytes: 98_362_432,
};

/** Where the default model, sentence-transformers/all-MiniLM-L6-v2, is downloaded from. */
export const DEFAULT_MODEL_URL =
  "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/main/";

/** The default model's files, pinned (the Hub's `main` revision, as the CLI pins them). */
export const DEFAULT_MODEL_FILES: Readonly<Record<ModelFileName, Required<FileSpec>>> = {
  "config.json": {
    sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    bytes: 612,
  },
  "tokenizer.json": {
    sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    bytes: 466_247,
  },
  "model.safetensors": {
    sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    bytes: 90_868_376,
  },
};
