// A small tool-using agent on @anthropic-ai/sdk, for the pyramid's "any process" tests.
//
//   node examples/node_agent/agent.mjs "summarize notes.txt into summary.txt"
//
// It works in its current directory with three tools (list_files, read_file, write_file), streams
// each model turn, runs the tools the model asks for and sends their results back, until the model
// ends its turn or MAX_STEPS model calls were made. The SDK reads ANTHROPIC_API_KEY and
// ANTHROPIC_BASE_URL itself, which is how `agentevals record -- node agent.mjs ...` points it at the
// endpoint. NODE_PATH (or a node_modules beside this file) must hold @anthropic-ai/sdk; the suite
// installs it with `npm ci --prefix tests/clients`.
//
// Resumed: AGENT_MESSAGES names a JSON file holding the conversation to go on from (a list of
// messages, or a checkpoint state the model endpoint wrote, whose request.messages it takes): the
// agent sends it as its next request instead of starting from the task.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve, relative, sep } from "node:path";

const require = createRequire(import.meta.url);
const sdk = require(require.resolve("@anthropic-ai/sdk", {
  paths: [process.cwd(), ...(process.env.NODE_PATH || "").split(":").filter(Boolean)],
}));
const Anthropic = sdk.default ?? sdk.Anthropic ?? sdk;

const MODEL = process.env.AGENT_MODEL || "claude-sonnet-4-6";
const MAX_STEPS = Number(process.env.AGENT_MAX_STEPS || 8);
const ROOT = process.cwd();

const tools = [
  {
    name: "list_files",
    description: "List the files in the working directory.",
    input_schema: { type: "object", properties: {} },
  },
  {
    name: "read_file",
    description: "Read a text file of the working directory.",
    input_schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  },
  {
    name: "write_file",
    description: "Write a text file in the working directory.",
    input_schema: {
      type: "object",
      properties: { path: { type: "string" }, content: { type: "string" } },
      required: ["path", "content"],
    },
  },
];

// A path the model gives stays inside the working directory.
function inside(path) {
  const full = resolve(ROOT, String(path));
  const rel = relative(ROOT, full);
  if (rel === "" || rel.startsWith("..") || rel.split(sep)[0] === "..") {
    throw new Error(`${path} is outside the working directory`);
  }
  return full;
}

function run(name, input) {
  if (name === "list_files") return readdirSync(ROOT).sort().join("\n");
  if (name === "read_file") return readFileSync(inside(input.path), "utf8");
  if (name === "write_file") {
    writeFileSync(inside(input.path), String(input.content));
    return `wrote ${input.path}`;
  }
  throw new Error(`no tool named ${name}`);
}

function resumed(path) {
  const saved = JSON.parse(readFileSync(path, "utf8"));
  const messages = Array.isArray(saved) ? saved : saved?.request?.messages;
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new Error(`${path} holds no conversation (a list of messages, or a state with request.messages)`);
  }
  return messages;
}

async function main() {
  const task = process.argv.slice(2).join(" ") || "list the files";
  const client = new Anthropic({ maxRetries: Number(process.env.AGENT_MAX_RETRIES || 2) });
  const messages = process.env.AGENT_MESSAGES ? resumed(process.env.AGENT_MESSAGES) : [{ role: "user", content: task }];
  for (let step = 1; step <= MAX_STEPS; step++) {
    const message = await client.messages
      .stream({ model: MODEL, max_tokens: 1024, system: "You are a careful file assistant.", tools, messages })
      .finalMessage();
    messages.push({ role: "assistant", content: message.content });
    const uses = message.content.filter((block) => block.type === "tool_use");
    if (message.stop_reason !== "tool_use" || uses.length === 0) {
      const text = message.content.filter((b) => b.type === "text").map((b) => b.text).join("\n");
      console.log(text);
      return 0;
    }
    const results = uses.map((use) => {
      try {
        return { type: "tool_result", tool_use_id: use.id, content: run(use.name, use.input) };
      } catch (error) {
        return { type: "tool_result", tool_use_id: use.id, content: String(error.message), is_error: true };
      }
    });
    messages.push({ role: "user", content: results });
  }
  console.error(`stopped after ${MAX_STEPS} model calls without a final answer`);
  return 2;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(`agent failed: ${error?.status ?? ""} ${error?.message ?? error}`);
    process.exit(1);
  },
);
