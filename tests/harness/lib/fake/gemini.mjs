// The Gemini API (generativelanguage v1beta), faked (see core.mjs): what
// Gemini CLI calls through GOOGLE_GEMINI_BASE_URL with an API key.
//
// Endpoints: POST /v1beta/models/MODEL:streamGenerateContent?alt=sse (an SSE
// stream of GenerateContentResponse chunks), POST .../MODEL:generateContent
// (one JSON response), POST .../MODEL:countTokens, GET /v1beta/models.
// Anything else is 404 and recorded.
//
// Side requests: Gemini CLI streams the agent's turns; what it asks with
// the plain generateContent call is bookkeeping (the router scoring a
// prompt's complexity, whether the model or the user speaks next, loop
// detection, summaries). Most of them ask for JSON with a response schema:
// the fake answers with a value fitting it (valueForSchema), preferring
// "user" as the next speaker so no extra turn starts on its own.

import { sendJson, sse, valueForSchema } from './core.mjs';

export const FAKE_GEMINI_MODEL = 'gemini-fake-pro';

function parts(list) {
  const out = [];
  for (const p of list ?? []) {
    if (typeof p.text === 'string') {
      if (p.thought !== true) out.push({ type: 'text', text: p.text });
    } else if (p.functionCall) {
      out.push({ type: 'tool_call', id: p.functionCall.id ?? '', name: p.functionCall.name, args: p.functionCall.args ?? {} });
    } else if (p.functionResponse) {
      const r = p.functionResponse;
      out.push({ type: 'tool_result', id: r.id ?? '', name: r.name ?? '', text: JSON.stringify(r.response ?? {}), isError: false });
    }
  }
  return out;
}

function modelAndMethod(url) {
  const m = /^\/v1beta\/models\/([^:/]+):([A-Za-z]+)$/.exec(url.pathname);
  return m ? { model: decodeURIComponent(m[1]), method: m[2] } : null;
}

export const gemini = {
  name: 'gemini',

  route(req, url) {
    const mm = modelAndMethod(url);
    if (req.method === 'POST' && mm && (mm.method === 'streamGenerateContent' || mm.method === 'generateContent')) return null;
    if (req.method === 'POST' && mm && mm.method === 'countTokens') {
      return (res, body) => sendJson(res, 200, { totalTokens: Math.ceil(JSON.stringify(body ?? '').length / 4) });
    }
    if (req.method === 'GET' && url.pathname === '/v1beta/models') {
      return (res) => sendJson(res, 200, { models: [{ name: `models/${FAKE_GEMINI_MODEL}`, displayName: FAKE_GEMINI_MODEL,
        supportedGenerationMethods: ['generateContent', 'streamGenerateContent', 'countTokens'] }] });
    }
    return (res) => sendJson(res, 404, { error: { code: 404, message: `fake: no ${req.method} ${url.pathname}`, status: 'NOT_FOUND' } });
  },

  parse(body, req, url) {
    if (!body || typeof body !== 'object') throw new Error('the body is not a JSON object');
    const mm = modelAndMethod(url);
    const tools = [];
    for (const t of body.tools ?? []) for (const f of t.functionDeclarations ?? []) tools.push(f.name);
    return {
      model: mm.model,
      stream: mm.method === 'streamGenerateContent',
      system: (body.systemInstruction?.parts ?? []).map((p) => p.text ?? '').join(''),
      tools,
      schema: body.generationConfig?.responseJsonSchema ?? body.generationConfig?.responseSchema ?? null,
      messages: (body.contents ?? []).map((c) => ({ role: c.role === 'model' ? 'assistant' : 'user', parts: parts(c.parts) }))
        // a functionResponse comes back in a "user" content: call it a tool message
        .map((m) => (m.parts.length > 0 && m.parts.every((p) => p.type === 'tool_result') ? { ...m, role: 'tool' } : m)),
    };
  },

  side(conv) {
    if (!conv.stream) return conv.schema ? 'structured (generateContent with a schema)' : 'generateContent';
    if (conv.model !== FAKE_GEMINI_MODEL) return `model ${conv.model}`;
    return null;
  },

  sideReply(conv) {
    if (conv.schema) return { json: valueForSchema(conv.schema, { next_speaker: 'user', complexity_score: 1 }) };
    return { text: 'Fake summary' };
  },

  write(res, reply, conv) {
    const out = [];
    const text = reply.json !== undefined ? JSON.stringify(reply.json) : reply.text;
    if (text) out.push({ text });
    for (const c of reply.calls ?? []) out.push({ functionCall: { name: c.name, args: c.args } });
    if (out.length === 0) out.push({ text: '' });
    const chunk = {
      candidates: [{ content: { role: 'model', parts: out }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
      modelVersion: conv.model,
    };
    if (!conv.stream) {
      sendJson(res, 200, chunk);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    sse(res, chunk);
    res.end();
  },
};
