// Proxies between the SDK and the engine, to test what happens on the
// network between them: a TCP proxy that can cut connections at chosen
// moments, and an HTTP proxy that serves the engine under a path prefix.
import net from 'node:net';
import http from 'node:http';

/**
 * A TCP proxy to target (host:port).
 * - dropAll(): cuts every open connection.
 * - dropAfterNextRequest(): forwards the next bytes the newest connection's
 *   client sends after the WebSocket handshake, then cuts that connection
 *   before any reply reaches the client (the engine still gets and
 *   processes the request). Only the newest connection: an older one's
 *   frame (a late ack, a heartbeat) must not be cut instead.
 * - refuse(bool): while true, new connections are closed at once.
 */
export async function startTCPProxy(target) {
  const [host, port] = target.split(':');
  const pairs = new Set();
  let refusing = false;
  let newest = null;
  let dropPair = null;
  const server = net.createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = net.connect(Number(port), host);
    const pair = { client, upstream, handshaken: false };
    pairs.add(pair);
    newest = pair;
    const cut = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk) => {
      upstream.write(chunk);
      if (pair.handshaken && dropPair === pair) {
        dropPair = null;
        pairs.delete(pair);
        client.destroy();
        // Let the request reach the engine, then close its side too.
        upstream.end();
      }
    });
    upstream.on('data', (chunk) => {
      if (!client.destroyed) client.write(chunk);
      pair.handshaken = true;
    });
    client.on('error', cut);
    upstream.on('error', cut);
    client.on('close', () => { if (pairs.has(pair)) cut(); });
    upstream.on('close', () => { if (pairs.has(pair)) cut(); });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    addr: `127.0.0.1:${server.address().port}`,
    dropAll() { for (const p of [...pairs]) { pairs.delete(p); p.client.destroy(); p.upstream.destroy(); } },
    dropAfterNextRequest() { dropPair = newest; },
    refuse(on) { refusing = on; },
    get connections() { return pairs.size; },
    async stop() {
      this.dropAll();
      await new Promise((r) => server.close(r));
    },
  };
}

/**
 * An HTTP reverse proxy serving target under prefix (e.g. /engine), as a
 * load balancer would: /engine/graphql → /graphql, WebSocket upgrades
 * included. Requests outside the prefix get 404.
 */
export async function startPrefixProxy(target, prefix) {
  const [host, port] = target.split(':');
  const strip = (url) => (url === prefix || url.startsWith(prefix + '/') || url.startsWith(prefix + '?')) ? (url.slice(prefix.length) || '/') : null;
  const server = http.createServer((req, res) => {
    const path = strip(req.url);
    if (path === null) {
      res.writeHead(404).end('outside the proxy prefix');
      return;
    }
    const up = http.request({ host, port, method: req.method, path, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  server.on('upgrade', (req, socket, head) => {
    const path = strip(req.url);
    if (path === null) {
      socket.end('HTTP/1.1 404 Not Found\r\n\r\n');
      return;
    }
    const up = net.connect(Number(port), host, () => {
      const headers = Object.entries(req.headers).map(([k, v]) => `${k}: ${v}`).join('\r\n');
      up.write(`${req.method} ${path} HTTP/1.1\r\n${headers}\r\n\r\n`);
      if (head.length) up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    const cut = () => { socket.destroy(); up.destroy(); };
    up.on('error', cut);
    socket.on('error', cut);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}${prefix}`,
    async stop() {
      server.closeAllConnections?.();
      await new Promise((r) => server.close(r));
    },
  };
}
