import { strict as assert } from "node:assert";
import { parseByokHeader, redact } from "../src/mcp/byok.ts";
import { HttpError } from "../src/http.ts";

const header = (json: string) => {
  const bytes = new TextEncoder().encode(json);
  return btoa(String.fromCharCode(...bytes));
};

Deno.test("X-PML-BYOK: ASCII and non-ASCII values decode to the same text that was sent", () => {
  const keys = parseByokHeader(header(JSON.stringify({ A_KEY: "sk-123", B_KEY: "clé-ü€-😀" })));
  assert.deepEqual([...keys], [["A_KEY", "sk-123"], ["B_KEY", "clé-ü€-😀"]]);
  assert.equal(parseByokHeader(null).size, 0);
  assert.equal(parseByokHeader(" ").size, 0);
});

Deno.test("X-PML-BYOK: bytes that are not UTF-8 are refused without quoting them", () => {
  // `{"K":"<0xff 0xfe>SECRET"}`: JSON around bytes no UTF-8 text can hold.
  const binary = '{"K":"' + String.fromCharCode(0xff, 0xfe) + 'SECRET"}';
  for (const value of [btoa(binary), "not-base64-SECRET!!", btoa("[1,2]"), btoa('{"K":1}')]) {
    assert.throws(
      () => parseByokHeader(value),
      (error: unknown) =>
        error instanceof HttpError && error.status === 400 && error.code === "invalid_byok" &&
        !error.message.includes("SECRET"),
    );
  }
});

Deno.test("redact scrubs a key as it is and percent-encoded (in a URL's query), and nothing else", () => {
  const keys = new Map([["K", "k+3y/SECRET=="], ["PLAIN", "sk-PLAIN-1"]]);
  const text = "a=k+3y/SECRET== b=k%2B3y%2FSECRET%3D%3D c=sk-PLAIN-1 d=k+3y";
  assert.equal(redact(text, keys), "a=[redacted] b=[redacted] c=[redacted] d=k+3y");
});
