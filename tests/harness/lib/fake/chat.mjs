// The OpenAI chat completions API, faked (see core.mjs): what OpenCode
// calls through an `@ai-sdk/openai-compatible` provider with a baseURL.
//
// Endpoints: POST /v1/chat/completions (SSE chunks ending in [DONE] when the
// body says stream: true, else one JSON completion), GET /v1/models.
// Anything else is 404 and recorded.
//
// Side requests: OpenCode asks its small model for a session title (and
// for summaries); the driver names a small model apart from the main one
// (FAKE_CHAT_SMALL_MODEL), so a request is the agent's turn when it names
// the main model and offers tools.

import { contentText, fakeId, parseArgs, sendJson, sse } from './core.mjs';

export const FAKE_CHAT_MODEL = 'fake-main';
export const FAKE_CHAT_SMALL_MODEL = 'fake-small';

function message(m) {
  if (m.role === 'tool') {
    return { role: 'tool', parts: [{ type: 'tool_result', id: m.tool_call_id, name: m.name ?? '', text: contentText(m.content), isError: false }] };
  }
  const parts = [];
  const text = contentText(m.content);
  if (text) parts.push({ type: 'text', text });
  for (const c of m.tool_calls ?? []) {
    parts.push({ type: 'tool_call', id: c.id, name: c.function?.name, args: parseArgs(c.function?.arguments) });
  }
  return { role: m.role === 'developer' ? 'system' : m.role, parts };
}

export const chat = {
  name: 'chat',

  route(req, url) {
    const p = url.pathname;
    if (req.method === 'POST' && p === '/v1/chat/completions') return null;
    if (req.method === 'GET' && p === '/v1/models') {
      return (res) => sendJson(res, 200, { object: 'list', data: [FAKE_CHAT_MODEL, FAKE_CHAT_SMALL_MODEL].map((id) => ({ id, object: 'model', created: 1735689600, owned_by: 'fake' })) });
    }
    return (res) => sendJson(res, 404, { error: { message: `fake: no ${req.method} ${p}`, type: 'invalid_request_error' } });
  },

  parse(body) {
    if (!body || typeof body !== 'object') throw new Error('the body is not a JSON object');
    const messages = (body.messages ?? []).map(message);
    return {
      model: body.model ?? '',
      stream: body.stream === true,
      includeUsage: body.stream_options?.include_usage === true,
      system: messages.filter((m) => m.role === 'system').map((m) => m.parts.map((p) => p.text ?? '').join('')).join('\n'),
      tools: (body.tools ?? []).map((t) => t.function?.name ?? t.name).filter(Boolean),
      messages,
    };
  },

  side(conv) {
    if (conv.model !== FAKE_CHAT_MODEL) return `model ${conv.model}`;
    if (conv.tools.length === 0) return 'no tools';
    return null;
  },

  sideReply() {
    return { text: 'Fake title' };
  },

  write(res, reply, conv) {
    const id = fakeId('chatcmpl_');
    const created = Math.floor(Date.now() / 1000);
    const text = reply.json !== undefined ? JSON.stringify(reply.json) : reply.text ?? '';
    const calls = (reply.calls ?? []).map((c, index) => ({ index, id: c.id, type: 'function',
      function: { name: c.name, arguments: JSON.stringify(c.args) } }));
    const finish = calls.length ? 'tool_calls' : 'stop';
    const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
    if (!conv.stream) {
      const msg = { role: 'assistant', content: text || null };
      if (calls.length) msg.tool_calls = calls.map(({ index, ...c }) => c);
      sendJson(res, 200, { id, object: 'chat.completion', created, model: conv.model,
        choices: [{ index: 0, message: msg, finish_reason: finish }], usage });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const chunk = (delta, finishReason = null) => sse(res, { id, object: 'chat.completion.chunk', created, model: conv.model,
      choices: [{ index: 0, delta, finish_reason: finishReason }] });
    chunk({ role: 'assistant', content: '' });
    if (text) chunk({ content: text });
    if (calls.length) chunk({ tool_calls: calls });
    chunk({}, finish);
    if (conv.includeUsage) sse(res, { id, object: 'chat.completion.chunk', created, model: conv.model, choices: [], usage });
    sse(res, '[DONE]');
    res.end();
  },
};
