// Pi's SessionManager on a session file: open, then build the context, timed apart.
// `cargo xtask bench` copies this file into the peers' install (where node_modules holds
// @earendil-works/pi-coding-agent) and runs it there on a copy of the file, removed afterwards.
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { copyFileSync, mkdtempSync, rmSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
const dir = mkdtempSync(join(tmpdir(), "pibench-"));
try {
  const file = join(dir, "s.jsonl");
  copyFileSync(process.argv[2], file);
  const t0 = performance.now();
  const sm = SessionManager.open(file, dir);
  const t1 = performance.now();
  const ctx = sm.buildSessionContext();
  const t2 = performance.now();
  console.log(JSON.stringify({ openMs: t1 - t0, contextMs: t2 - t1, messages: ctx.messages.length,
    maxRssMB: process.resourceUsage().maxRSS / 1024 }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
