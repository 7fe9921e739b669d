/**
 * harness_core's approval gate for pi (loaded with `pi --mode rpc -e approvals.ts`).
 *
 * Pi has no permission system; this extension asks the host before every tool call. The
 * question travels over RPC mode's extension UI sub-protocol: an `editor` dialog titled
 * `harness-permission` whose prefill is the call as JSON ({tool, toolCallId, input}); the
 * adapter answers with an `extension_ui_response` whose value is the decision as JSON
 * ({allow, input?, reason?}). A deny blocks the call with the host's reason; an allow with
 * `input` replaces the call's arguments (pi runs the mutated `event.input`). Anything else -
 * a cancelled dialog, an unreadable answer, an error here - blocks: nothing runs unasked.
 *
 * HARNESS_PI_TRUSTED_TOOLS (comma-separated) names tools that run without asking (the
 * harness's own answer tool); HARNESS_PI_TRUSTED_MCP_SERVER names the host's bridge, whose
 * read-only tools pi-mcp-adapter's `mcp` proxy calls unasked (only a plain call of one of that
 * server's tools: connecting, searching or authenticating elsewhere still asks).
 */

const TITLE = "harness-permission";

function trusted(): Set<string> {
	const names = (process.env.HARNESS_PI_TRUSTED_TOOLS ?? "").split(",");
	return new Set(names.map((name) => name.trim()).filter((name) => name.length > 0));
}

function bridgeCall(event: any, server: string): boolean {
	if (!server || event.toolName !== "mcp") return false;
	const input = event.input ?? {};
	const plain = Object.keys(input).every((key) => key === "tool" || key === "args" || key === "server");
	const named = typeof input.tool === "string" && input.tool.startsWith(`${server}_`);
	return plain && named && (input.server === undefined || input.server === server);
}

export default function (pi: any) {
	const skip = trusted();
	const server = (process.env.HARNESS_PI_TRUSTED_MCP_SERVER ?? "").trim();
	pi.on("tool_call", async (event: any, ctx: any) => {
		if (skip.has(event.toolName) || bridgeCall(event, server)) return undefined;
		const call = JSON.stringify({ tool: event.toolName, toolCallId: event.toolCallId, input: event.input });
		let answer: unknown;
		try {
			answer = await ctx.ui.editor(TITLE, call);
		} catch {
			return { block: true, reason: "the host could not be asked" };
		}
		if (typeof answer !== "string") return { block: true, reason: "the host did not answer" };
		let decision: any;
		try {
			decision = JSON.parse(answer);
		} catch {
			return { block: true, reason: "the host's answer was unreadable" };
		}
		if (decision === null || typeof decision !== "object" || decision.allow !== true) {
			const reason = typeof decision?.reason === "string" && decision.reason ? decision.reason : "denied by the host";
			return { block: true, reason };
		}
		const edited = decision.input;
		if (edited !== null && typeof edited === "object" && !Array.isArray(edited)) {
			for (const key of Object.keys(event.input)) delete event.input[key];
			Object.assign(event.input, edited);
		}
		return undefined;
	});
}
