// receiver.mjs - a sink for the events tests: a small HTTP server that takes
// shortd's batches as a webhook receiver (any path but /batch and /ingest)
// and as seed 004's ingest (POST /batch, POST /ingest), and whose behaviour
// is switched at run time:
//
//   up        answers: webhook 204; /batch 200 with one "recorded" (or
//             "duplicate", for an ID seen before) result per event
//   down      the port refuses connections (the listener is closed)
//   slow      answers as 'up' after `slowMs`
//   500       answers 500
//   garbage   answers 200 with a body that is not JSON (ingest retries; a
//             webhook takes any 2xx, so the receiver keeps those events) or,
//             with `rawGarbage`, bytes that are no HTTP at all
//   timeout   never answers
//   statuses  /batch answers each event with statusFor(event, index)
//   nobatch   /batch answers 404, /ingest 202 {success, idempotency_key, status: queued}
//
// It keeps every event it acknowledged by ID (the first copy's text and
// how many times it came), and every request (path, headers, body) for the
// signature checks. Only events it acknowledged count as received: what a
// failure mode refused is not. Only Node's built-in modules are used.

import http from 'node:http';

export class Receiver {
    constructor() {
        this.mode = 'up';
        this.slowMs = 2000;
        this.rawGarbage = false;
        this.statusFor = () => 'recorded';
        this.events = new Map();     // id -> { text, event, copies }
        this.requests = [];          // { path, headers, body, at }
        this.conflicts = [];         // an ID that came again with other bytes
        this.sockets = new Set();
        this.server = null;
        this.port = 0;
    }

    get url() { return `http://127.0.0.1:${this.port}`; }

    async start(port = 0) {
        this.server = http.createServer((req, res) => this._handle(req, res));
        this.server.on('connection', (s) => {
            this.sockets.add(s);
            s.on('close', () => this.sockets.delete(s));
        });
        await new Promise((resolve, reject) => {
            this.server.once('error', reject);
            this.server.listen(port, '127.0.0.1', () => resolve());
        });
        this.port = this.server.address().port;
        return this;
    }

    async stop() {
        if (!this.server) return;
        for (const s of this.sockets) s.destroy();
        await new Promise((resolve) => this.server.close(() => resolve()));
        this.server = null;
    }

    /* Switches the mode; 'down' closes the listener, leaving it 'down'
     * restarts it on the same port. */
    async setMode(mode) {
        if (mode === 'down' && this.server) await this.stop();
        if (mode !== 'down' && !this.server) await this.start(this.port);
        this.mode = mode;
        if (mode !== 'timeout' && mode !== 'slow') {
            // connections held by 'timeout' stay open; cut them so shortd sees the change
            for (const s of this.sockets) if (s._shortdHeld) s.destroy();
        }
    }

    /* Every event received once or more, as parsed JSON. */
    list() { return [...this.events.values()].map((e) => e.event); }
    duplicates() { return [...this.events.values()].filter((e) => e.copies > 1).length; }

    _keep(text) {
        const event = JSON.parse(text);
        const had = this.events.get(event.id);
        if (had) {
            had.copies++;
            if (had.text !== text) this.conflicts.push(event.id);
            return 'duplicate';
        }
        this.events.set(event.id, { text, event, copies: 1 });
        return 'recorded';
    }

    _handle(req, res) {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => {
            const body = Buffer.concat(chunks).toString('utf8');
            const path = req.url;
            this.requests.push({ path, headers: req.headers, body, at: Date.now() });
            const mode = this.mode;
            if (mode === 'timeout') {
                req.socket._shortdHeld = true;
                return; // never answered
            }
            if (mode === 'slow') {
                setTimeout(() => this._answer(path, body, res, 'up'), this.slowMs);
                return;
            }
            this._answer(path, body, res, mode);
        });
    }

    _answer(path, body, res, mode) {
        if (mode === '500') {
            res.writeHead(500, { 'content-type': 'text/plain' });
            res.end('internal error');
            return;
        }
        if (mode === 'garbage') {
            if (this.rawGarbage) {
                res.socket.end('\x00\x01 this is no HTTP \r\n\r\n');
                return;
            }
            // A webhook takes any 2xx as accepted: what it accepted it has.
            if (!path.endsWith('/batch') && !path.endsWith('/ingest')) this._webhook(body);
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end('{"success": tru');
            return;
        }
        if (path.endsWith('/batch')) {
            if (mode === 'nobatch') {
                res.writeHead(404);
                res.end();
                return;
            }
            const list = JSON.parse(body).events;
            const results = list.map((e, index) => {
                const text = JSON.stringify(e);
                const wanted = mode === 'statuses' ? this.statusFor(e, index) : 'recorded';
                let status = wanted;
                if (wanted === 'recorded') status = this._keep(this._exact(body, index, text));
                return { index, idempotency_key: e.id, status };
            });
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ success: true, results }));
            return;
        }
        if (path.endsWith('/ingest')) {
            const e = JSON.parse(body);
            this._keep(body);
            res.writeHead(202, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ success: true, idempotency_key: e.id, status: 'queued', committed: true }));
            return;
        }
        this._webhook(body);
        res.writeHead(204);
        res.end();
    }

    /* A webhook's batch: every event, by its exact text. */
    _webhook(body) {
        const list = JSON.parse(body).events;
        list.forEach((e, i) => this._keep(this._exact(body, i, JSON.stringify(e))));
    }

    /* The i-th event's exact text in the batch (JSON.stringify of the parsed
     * event is the same bytes for shortd's compact JSON; checked, so a
     * difference shows rather than hides). */
    _exact(body, i, text) {
        if (!body.includes(text)) throw new Error(`event ${i} is not compact JSON as sent: ${text}`);
        return text;
    }
}
