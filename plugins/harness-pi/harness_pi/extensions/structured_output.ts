/**
 * harness_core's structured turn output for pi (loaded with `-e structured_output.ts`).
 *
 * Registers one tool whose parameters are the host's JSON Schema (HARNESS_PI_OUTPUT_SCHEMA):
 * pi validates the model's arguments against it (coercing "2" to 2), sends a failed
 * validation back to the model as the tool's error, and a valid call ends the turn
 * (`terminate: true`, no follow-up model call). The answer is the tool result's `details`,
 * which the adapter reads from `tool_execution_end`; the runtime validates it again.
 * (The adapter wraps a schema that is not an object as {"value": schema}: tool parameters are
 * objects; it unwraps the answer again.)
 */

const NAME = "structured_output";

export default function (pi: any) {
	const text = process.env.HARNESS_PI_OUTPUT_SCHEMA;
	if (!text) return;
	const schema = JSON.parse(text);
	pi.registerTool({
		name: NAME,
		label: "Structured answer",
		description:
			"Give the final answer of this turn. Its arguments are the answer and must match the parameters' JSON Schema.",
		promptSnippet: "Give the turn's final answer as this tool's arguments",
		promptGuidelines: [
			"End every turn by calling structured_output with the final answer as its arguments.",
			"Do not answer in plain text; after calling structured_output, do not write anything else.",
		],
		parameters: schema,
		async execute(_toolCallId: string, params: unknown) {
			return {
				content: [{ type: "text", text: "Answer recorded." }],
				details: params,
				terminate: true,
			};
		},
	});
}
