import { strict as assert } from "node:assert";
import { parseByokHeader } from "../src/mcp/byok.ts";
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
