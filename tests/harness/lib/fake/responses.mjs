// The OpenAI Responses API, faked (see core.mjs): what Codex CLI calls
// through a model_provider with base_url and wire_api = "responses".
//
// Endpoints: POST /v1/responses (an SSE stream of response.* events; Codex
// always streams), GET /v1/models (a list naming the fake models). Anything
// else is 404 and recorded.
//
// Side requests: Codex says what each request is for in its
// x-codex-turn-metadata header (request_kind: "turn" for the agent's own
// turns; compaction, titles and reviews say otherwise), so a request is a
// side request when that header names another kind.

import { contentText, fakeId, parseArgs, sendJson, sse } from './core.mjs';

export const FAKE_RESPONSES_MODEL = 'gpt-fake';

function outputText(output) {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) return contentText(output);
  if (output && typeof output === 'object') return contentText(output.content ?? []);
  return '';
}

// One item of `input` as a Message of the common Conversation.
function message(item) {
  switch (item.type ?? 'message') {
    case 'message': {
      const role = item.role === 'developer' ? 'system' : item.role;
      return { role, parts: [{ type: 'text', text: contentText(item.content) }] };
    }
    case 'function_call':
      return { role: 'assistant', parts: [{ type: 'tool_call', id: item.call_id,
        name: item.namespace ? `${item.namespace}__${item.name}` : item.name, args: parseArgs(item.arguments) }] };
    case 'custom_tool_call':
      return { role: 'assistant', parts: [{ type: 'tool_call', id: item.call_id, name: item.name, args: { input: item.input } }] };
    case 'function_call_output':
    case 'custom_tool_call_output':
      return { role: 'tool', parts: [{ type: 'tool_result', id: item.call_id, name: '', text: outputText(item.output), isError: false }] };
    case 'reasoning':
      return null; // the model's own thoughts: nothing the tests look for
    default:
      return { role: 'system', parts: [{ type: 'text', text: JSON.stringify(item) }] };
  }
}

function turnMetadata(req) {
  try {
    return JSON.parse(req.headers['x-codex-turn-metadata'] ?? '{}');
  } catch {
    return {};
  }
}

export const responses = {
  name: 'responses',

  route(req, url) {
    const p = url.pathname;
    if (req.method === 'POST' && p === '/v1/responses') return null;
    if (req.method === 'GET' && p === '/v1/models') {
      return (res) => sendJson(res, 200, { object: 'list', data: [{ id: FAKE_RESPONSES_MODEL, object: 'model', created: 1735689600, owned_by: 'fake' }] });
    }
    return (res) => sendJson(res, 404, { error: { message: `fake: no ${req.method} ${p}`, type: 'invalid_request_error' } });
  },

  parse(body) {
    if (!body || typeof body !== 'object') throw new Error('the body is not a JSON object');
    // Codex offers an MCP server's tools as one `namespace` tool holding
    // functions; the model calls one with its name and the namespace. Each
    // is listed here as NAMESPACE__NAME (mcp__vigil__monitor_list), the name
    // Claude Code uses too.
    const namespaces = {};
    for (const t of body.tools ?? []) {
      if (t.type === 'namespace') {
        for (const f of t.tools ?? []) namespaces[`${t.name}__${f.name}`] = { namespace: t.name, name: f.name };
      } else {
        const name = t.name ?? t.function?.name ?? t.type;
        if (name) namespaces[name] = { namespace: undefined, name };
      }
    }
    const input = typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : body.input ?? [];
    return {
      model: body.model ?? '',
      stream: body.stream !== false,
      system: typeof body.instructions === 'string' ? body.instructions : '',
      tools: Object.keys(namespaces),
      namespaces,
      messages: input.map(message).filter(Boolean),
    };
  },

  side(conv, req) {
    const kind = turnMetadata(req).request_kind;
    if (kind !== undefined && kind !== 'turn') return `request_kind ${kind}`;
    if (conv.tools.length === 0) return 'no tools';
    return null;
  },

  sideReply() {
    return { text: 'Fake summary' };
  },

  // Codex's thread id: one conversation per thread (a resumed thread keeps it).
  thread(r) {
    return turnMetadata({ headers: r.headers }).thread_id ?? r.headers['session-id'] ?? '';
  },

  write(res, reply, conv) {
    const id = fakeId('resp_');
    const items = [];
    const text = reply.json !== undefined ? JSON.stringify(reply.json) : reply.text;
    if (text) {
      items.push({ type: 'message', id: fakeId('msg_'), role: 'assistant', status: 'completed',
        content: [{ type: 'output_text', text, annotations: [] }] });
    }
    for (const c of reply.calls ?? []) {
      const { namespace, name } = conv.namespaces[c.name] ?? { name: c.name };
      items.push({ type: 'function_call', id: fakeId('fc_'), call_id: c.id, name, ...(namespace ? { namespace } : {}),
        arguments: JSON.stringify(c.args), status: 'completed' });
    }
    const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5,
      output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 };
    const response = { id, object: 'response', created_at: Math.floor(Date.now() / 1000), model: conv.model, status: 'in_progress', output: [] };
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    let seq = 0;
    const ev = (type, data) => sse(res, { type, sequence_number: seq++, ...data }, type);
    ev('response.created', { response });
    ev('response.in_progress', { response });
    items.forEach((item, output_index) => {
      if (item.type === 'message') {
        ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } });
        ev('response.content_part.added', { item_id: item.id, output_index, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
        ev('response.output_text.delta', { item_id: item.id, output_index, content_index: 0, delta: item.content[0].text });
        ev('response.output_text.done', { item_id: item.id, output_index, content_index: 0, text: item.content[0].text });
        ev('response.content_part.done', { item_id: item.id, output_index, content_index: 0, part: item.content[0] });
      } else {
        ev('response.output_item.added', { output_index, item: { ...item, arguments: '', status: 'in_progress' } });
        ev('response.function_call_arguments.delta', { item_id: item.id, output_index, delta: item.arguments });
        ev('response.function_call_arguments.done', { item_id: item.id, output_index, arguments: item.arguments });
      }
      ev('response.output_item.done', { output_index, item });
    });
    ev('response.completed', { response: { ...response, status: 'completed', output: items, usage } });
    res.end();
  },
};
