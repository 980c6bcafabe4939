/**
 * A sandbox refusal of a deno module in PML's words. Deno ends its message with its own fix ("run
 * again with the --allow-net flag"), which a PML user cannot apply: a refused host is named with
 * the setting that grants it, `sandbox.net` of `.pml.json` (for a registry module, which must also
 * declare the host) or `private_mcps.<ns>.permissions.net` (for a private one).
 */
export function refusalText(
  message: string,
  module: { readonly source: string; readonly ns: string },
  granted: readonly string[],
): string {
  const plain = message.replace(/,? run again with the --allow-[\w-]+ flag\.?$/, "");
  const host = /Requires net access to "([^"]+)"/.exec(message)?.[1];
  if (!host) return plain;
  const now = granted.length ? `granted now: ${granted.join(", ")}` : "none granted now";
  return module.source === "private"
    ? `no network access to "${host}" (${now}): add it to "private_mcps.${module.ns}.permissions.net" ` +
      `in .pml.json`
    : `no network access to "${host}" (${now}): a registry module reaches only hosts it declares ` +
      `(__meta__.permissions.net) and that .pml.json "sandbox.net" grants; add "${host}" to ` +
      `"sandbox.net" if the module declares it`;
}
