/** Test helper: raw HTTP/1.1 requests, so that `Host`, `Origin` and `Cookie` are exactly what an attacker sends. */

/** A raw HTTP/1.1 request to `hostPort` (`127.x.y.z:PORT`). */
export async function rawHttp(
  hostPort: string,
  request: { method?: string; path: string; headers: Record<string, string>; body?: string },
): Promise<{ status: number; headers: string; body: string }> {
  const [hostname, port] = splitHostPort(hostPort);
  const conn = await Deno.connect({ hostname, port });
  const body = request.body ?? "";
  const head = [
    `${request.method ?? "GET"} ${request.path} HTTP/1.1`,
    ...Object.entries({
      connection: "close",
      "content-length": String(new TextEncoder().encode(body).length),
      ...request.headers,
    }).map(([k, v]) => `${k}: ${v}`),
  ].join("\r\n");
  await conn.write(new TextEncoder().encode(`${head}\r\n\r\n${body}`));
  const text = await new Response(conn.readable).text();
  const [headers, ...rest] = text.split("\r\n\r\n");
  return { status: Number(headers.split(" ")[1]), headers, body: rest.join("\r\n\r\n") };
}

function splitHostPort(hostPort: string): [string, number] {
  const i = hostPort.lastIndexOf(":");
  return [hostPort.slice(0, i), Number(hostPort.slice(i + 1))];
}

/** A link's session: trades a one-time approval link for the page's cookie and form token. */
export async function enterPage(url: string): Promise<
  { host: string; cookie: string; csrf: string; page: string; status: number }
> {
  const u = new URL(url);
  const r = await rawHttp(u.host, { path: u.pathname + u.search, headers: { host: u.host } });
  const cookie = r.headers.match(/set-cookie: ([^;]+);/i)?.[1] ?? "";
  if (r.status !== 303 || !cookie) {
    return { host: u.host, cookie, csrf: "", page: r.body, status: r.status };
  }
  const page = await rawHttp(u.host, { path: "/", headers: { host: u.host, cookie } });
  const csrf = page.body.match(/name="csrf" value="([0-9a-f]+)"/)?.[1] ?? "";
  return { host: u.host, cookie, csrf, page: page.body, status: page.status };
}

/** A decision posted on the page as its own form does: cookie, form token and the page's Origin. */
export async function postDecision(
  session: { host: string; cookie: string; csrf: string },
  id: string,
  decision: string,
): Promise<{ status: number; body: string }> {
  return await rawHttp(session.host, {
    method: "POST",
    path: "/decide",
    headers: {
      host: session.host,
      origin: `http://${session.host}`,
      cookie: session.cookie,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams({ id, decision, csrf: session.csrf }).toString(),
  });
}
