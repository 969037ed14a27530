// Pi extension loaded by strata's cache benchmark (`pi -e xtask/peers/pi-clock.ts`): before each
// provider request it moves strata-mock's virtual clock by the workload's seconds between
// requests, as the bench's wrapper does before each of strata's requests. The handler is
// awaited by Pi, so the clock has moved before the request leaves.
export default function (pi: any) {
	const url = process.env.STRATA_BENCH_CLOCK_URL;
	const seconds = Number(process.env.STRATA_BENCH_CLOCK_SECONDS ?? "0");
	if (!url || !(seconds > 0)) return;
	pi.on("before_provider_request", async () => {
		await fetch(url, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({ seconds }),
		});
	});
}
