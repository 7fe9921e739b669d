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
 * HARNESS_PI_TRUSTED_TOOLS (comma-separated) names tools that run without asking: the
 * harness's own answer tool and the host's read-only bridge tools.
 */

const TITLE = "harness-permission";

function trusted(): Set<string> {
	const names = (process.env.HARNESS_PI_TRUSTED_TOOLS ?? "").split(",");
	return new Set(names.map((name) => name.trim()).filter((name) => name.length > 0));
}

export default function (pi: any) {
	const skip = trusted();
	pi.on("tool_call", async (event: any, ctx: any) => {
		if (skip.has(event.toolName)) return undefined;
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
