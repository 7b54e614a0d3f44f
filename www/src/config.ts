// The site's edgerag.json (written by `edgerag serve`): the bundles it offers and the model.
import type { FileSpec, ModelFileName } from "@edgerag/web";

export interface SiteBundle {
  name: string;
  url: string;
  bytes: number;
  sha256: string;
  corpus: string;
  chunks: number;
  embedding: string | null;
}

export interface SiteModel {
  id: string;
  url: string;
  files: Record<ModelFileName, Required<FileSpec>>;
}

/** A GGUF chat model the site serves, for answers written in the tab. */
export interface SiteChatModel {
  name: string;
  url: string;
  bytes: number;
  sha256: string;
}

export interface SiteConfig {
  bundles: SiteBundle[];
  model: SiteModel | null;
  chat_model?: SiteChatModel | null;
}

/** The site's configuration; none (no bundles, the default model) when the file is absent. */
export async function loadConfig(): Promise<SiteConfig> {
  const response = await fetch("edgerag.json", { cache: "no-cache" });
  if (response.status === 404) return { bundles: [], model: null, chat_model: null };
  if (!response.ok) throw new Error(`edgerag.json: HTTP ${response.status}`);
  return (await response.json()) as SiteConfig;
}
