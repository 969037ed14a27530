// Pi extension loaded by strata's cache benchmark (`pi -e xtask/peers/pi-bench-tools.ts`): the
// bench's MCP-like tools (xtask/src/bench/tools.rs), registered as Pi extension tools with the
// same description, parameters and answer, so Pi plays them as tools, as its users add such
// tools. The command `/bench-tools NAME,NAME` makes exactly those bench tools active next to
// Pi's built-ins (the workload's tool-set changes); an extension command runs without a
// model request.
const BUILTINS = ["read", "bash", "edit", "write"];

function names(list: string | undefined): string[] {
	return (list ?? "")
		.split(",")
		.map((name) => name.trim())
		.filter((name) => name.length > 0);
}

export default function (pi: any) {
	const all = names(process.env.STRATA_BENCH_TOOL_NAMES);
	for (const name of all) {
		pi.registerTool({
			name,
			label: name,
			description:
				`${name}: a tool provided by an external server (MCP). Send a query describing what you ` +
				"need; the server answers with the matching records, each on its own line, most " +
				"relevant first. Use it when the built-in tools cannot answer; results may be " +
				"truncated to the first 50 records, and a query that matches nothing returns an empty " +
				"answer rather than an error.",
			parameters: {
				type: "object",
				properties: {
					query: { type: "string", description: "What to look for." },
					limit: { type: "integer", description: "Most records to return (default 50)." },
				},
				required: ["query"],
			},
			async execute(_id: string, params: { query?: string }) {
				const query = params.query ?? "";
				let text = "";
				for (let record = 0; record < 6; record++) {
					text += `${name}: record ${record} for "${query}" — status ok, updated at step ${record}\n`;
				}
				return { content: [{ type: "text", text }], details: {} };
			},
		});
	}
	const activate = (bench: string[]) => pi.setActiveTools([...BUILTINS, ...bench]);
	pi.on("session_start", async () => {
		activate(names(process.env.STRATA_BENCH_START_TOOLS));
	});
	pi.registerCommand("bench-tools", {
		description: "Make exactly these bench tools active (comma-separated)",
		handler: async (args: string) => {
			activate(names(args));
		},
	});
}
