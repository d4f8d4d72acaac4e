// A real MCP client: the official TypeScript SDK (@modelcontextprotocol/sdk),
// the one most JavaScript clients and @modelcontextprotocol/inspector-cli use.
// tests/tests/mcp_ts_sdk.rs runs it against the real host.
//
// Environment: ASK_USER_MCP_URL (the /mcp URL with ?session=), ASK_USER_TOKEN,
// and ASK_USER_SCENARIO, a JSON object:
//   arguments       the tool's arguments
//   timeout_ms      the SDK's request timeout (its default is 60000)
//   progress        pass onprogress (the SDK then sends a progress token)
//   reset_on_progress  resetTimeoutOnProgress
//   max_calls       call again with the same arguments while the result is
//                   `waiting`, as the tool's text tells a model to, at most this often
//   retry_on_stdin  before calling again, wait for a line on stdin (the test
//                   says when, so what happens in between is not a race)
// Prints one JSON line per event on stdout: {"event": "connected"},
// {"event": "progress", "progress", "message"}, {"event": "result", "result"},
// {"event": "error", "code", "message"}, then exits 0 (or 1 on a failure
// before any call).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createInterface } from "node:readline";

const say = (event) => process.stdout.write(JSON.stringify(event) + "\n");

const url = new URL(process.env.ASK_USER_MCP_URL);
const token = process.env.ASK_USER_TOKEN;
const scenario = JSON.parse(process.env.ASK_USER_SCENARIO);

const transport = new StreamableHTTPClientTransport(url, {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "ts-sdk-test", version: "1.0.0" });
try {
  await client.connect(transport);
} catch (error) {
  say({ event: "error", code: error.code ?? null, message: String(error.message ?? error) });
  process.exit(1);
}
say({ event: "connected", protocol: transport.protocolVersion ?? null });

const stdinLines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

const options = { timeout: scenario.timeout_ms };
if (scenario.progress) {
  options.onprogress = (p) => say({ event: "progress", progress: p.progress, message: p.message ?? null });
  options.resetTimeoutOnProgress = Boolean(scenario.reset_on_progress);
}

for (let call = 1; call <= (scenario.max_calls ?? 1); call++) {
  let result;
  try {
    result = await client.callTool(
      { name: "ask_user_question", arguments: scenario.arguments },
      undefined,
      options,
    );
  } catch (error) {
    say({ event: "error", code: error.code ?? null, message: String(error.message ?? error) });
    break;
  }
  say({ event: "result", call, result });
  if (result.structuredContent?.status !== "waiting") break;
  if (scenario.retry_on_stdin && (await stdinLines.next()).done) break;
}
await client.close();
