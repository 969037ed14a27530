// Pi extension used by `cargo xtask bench-mcp` (xtask/src/bench/mcp_churn.rs), copied into the
// run's agent dir (`$PI_CODING_AGENT_DIR/extensions/`), where Pi discovers it. It connects and
// disconnects real MCP servers through Pi's own MCP support (`pi.registerMcpServer`,
// `pi.unregisterMcpServer`): a prompt starting with `[[bench-mcp:NAME,NAME]] ` makes exactly
// those servers registered, waits until their tools are, then reaches the model without
// that prefix. The servers' configs
// (mcp.json entries, `exposure: "direct"`) are read from `$PI_CODING_AGENT_DIR/bench-mcp.json`.
import { readFileSync } from "node:fs";
import { join } from "node:path";

const PREFIX = /^\[\[bench-mcp:([^\]]*)\]\] /;

export default function (pi: any) {
	const dir = process.env.PI_CODING_AGENT_DIR ?? ".";
	const configs: Record<string, unknown> = JSON.parse(readFileSync(join(dir, "bench-mcp.json"), "utf8"));
	let live: string[] = [];
	pi.on("input", async (event: any) => {
		const match = PREFIX.exec(event.text ?? "");
		if (!match) return { action: "continue" };
		const wanted = match[1]
			.split(",")
			.map((name) => name.trim())
			.filter((name) => name.length > 0);
		for (const name of live) {
			if (!wanted.includes(name)) pi.unregisterMcpServer(name);
		}
		for (const name of wanted) {
			if (!live.includes(name)) pi.registerMcpServer(name, configs[name]);
		}
		const added = wanted.filter((name) => !live.includes(name));
		live = wanted;
		// Pi does not wait for a server registered this late before the request (its tools
		// arrive mid-run): wait here, as a user would before typing, until every new server's
		// tools are registered and reachable, at most 30 s.
		const deadline = Date.now() + 30_000;
		const ready = (name: string) =>
			pi
				.getAllTools()
				.some((tool: any) => tool.name.startsWith(`mcp__${name}__`) && tool.exposure !== "hidden");
		while (Date.now() < deadline && !added.every(ready)) {
			await new Promise((resolve) => setTimeout(resolve, 50));
		}
		return { action: "transform", text: event.text.slice(match[0].length) };
	});
}
