import { Buffer } from "node:buffer";

/** Standard base64 of `bytes`. */
export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64");
}

/** Unpadded base64url of `bytes`. */
export function encodeBase64Url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64url");
}
