// The Anthropic Messages API, faked (see core.mjs): what Claude Code calls
// through ANTHROPIC_BASE_URL.
//
// Endpoints: POST /v1/messages (streaming SSE when the body says stream:
// true, else one JSON message), POST /v1/messages/count_tokens, GET
// /v1/models[/ID]. Anything else is 404 and recorded.
//
// Side requests: Claude Code calls the API for more than the agent's turns
// (a title for the session, whether a message starts a new topic, a quota
// probe, a bash command's safety classification, summaries). Every one of
// them is sent with its small fast model or without the agent's tools; the
// driver gives the main model and the small model different names
// (FAKE_MAIN_MODEL, FAKE_SMALL_MODEL), so a request is the agent's turn
// when it names the main model and offers tools. The rest are answered
// with a short text ("Fake title") and marked side.

import { contentText, fakeId, sendJson, sse } from './core.mjs';

export const FAKE_MAIN_MODEL = 'claude-fake-main';
export const FAKE_SMALL_MODEL = 'claude-fake-small';

function parts(content) {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  const out = [];
  for (const b of content ?? []) {
    if (b.type === 'text') out.push({ type: 'text', text: b.text });
    else if (b.type === 'tool_use') out.push({ type: 'tool_call', id: b.id, name: b.name, args: b.input ?? {} });
    else if (b.type === 'tool_result') {
      out.push({ type: 'tool_result', id: b.tool_use_id, name: '', text: contentText(b.content), isError: b.is_error === true });
    }
    // thinking, images, documents: not text the tests look for
  }
  return out;
}

export const anthropic = {
  name: 'anthropic',

  route(req, url) {
    const p = url.pathname;
    if (req.method === 'POST' && p === '/v1/messages') return null;
    if (req.method === 'POST' && p === '/v1/messages/count_tokens') {
      return (res, body) => sendJson(res, 200, { input_tokens: Math.ceil(JSON.stringify(body ?? '').length / 4) });
    }
    if (req.method === 'GET' && (p === '/v1/models' || p.startsWith('/v1/models/'))) {
      const model = (id) => ({ type: 'model', id, display_name: id, created_at: '2025-01-01T00:00:00Z' });
      if (p === '/v1/models') {
        const data = [model(FAKE_MAIN_MODEL), model(FAKE_SMALL_MODEL)];
        return (res) => sendJson(res, 200, { data, has_more: false, first_id: data[0].id, last_id: data[1].id });
      }
      return (res) => sendJson(res, 200, model(decodeURIComponent(p.slice('/v1/models/'.length))));
    }
    return (res) => sendJson(res, 404, { type: 'error', error: { type: 'not_found_error', message: `fake: no ${req.method} ${p}` } });
  },

  parse(body) {
    if (!body || typeof body !== 'object') throw new Error('the body is not a JSON object');
    const system = typeof body.system === 'string' ? body.system : contentText(body.system);
    return {
      model: body.model ?? '',
      stream: body.stream === true,
      system,
      tools: (body.tools ?? []).map((t) => t.name).filter(Boolean),
      maxTokens: body.max_tokens,
      messages: (body.messages ?? []).map((m) => ({ role: m.role, parts: parts(m.content) })),
    };
  },

  side(conv) {
    if (conv.model !== FAKE_MAIN_MODEL) return `model ${conv.model}`;
    if (conv.tools.length === 0) return 'no tools';
    if (conv.maxTokens !== undefined && conv.maxTokens <= 1) return 'quota probe';
    return null;
  },

  sideReply() {
    return { text: 'Fake title' };
  },

  // Claude Code's session id: one conversation per session.
  thread(r) {
    return r.headers['x-claude-code-session-id'] ?? '';
  },

  write(res, reply, conv) {
    const id = fakeId('msg_');
    const blocks = [];
    const text = reply.json !== undefined ? JSON.stringify(reply.json) : reply.text;
    if (text) blocks.push({ type: 'text', text });
    for (const c of reply.calls ?? []) blocks.push({ type: 'tool_use', id: `toolu_${c.id}`, name: c.name, input: c.args });
    if (blocks.length === 0) blocks.push({ type: 'text', text: '' });
    const stop = reply.calls?.length ? 'tool_use' : 'end_turn';
    const usage = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
    if (!conv.stream) {
      sendJson(res, 200, { id, type: 'message', role: 'assistant', model: conv.model, content: blocks,
        stop_reason: stop, stop_sequence: null, usage });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    sse(res, { type: 'message_start', message: { id, type: 'message', role: 'assistant', model: conv.model, content: [],
      stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } }, 'message_start');
    blocks.forEach((b, index) => {
      if (b.type === 'text') {
        sse(res, { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }, 'content_block_start');
        sse(res, { type: 'content_block_delta', index, delta: { type: 'text_delta', text: b.text } }, 'content_block_delta');
      } else {
        sse(res, { type: 'content_block_start', index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } },
          'content_block_start');
        sse(res, { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) } },
          'content_block_delta');
      }
      sse(res, { type: 'content_block_stop', index }, 'content_block_stop');
    });
    sse(res, { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } }, 'message_delta');
    sse(res, { type: 'message_stop' }, 'message_stop');
    res.end();
  },
};
