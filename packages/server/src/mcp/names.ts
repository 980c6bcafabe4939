/**
 * Exposed tool names (DESIGN §3): the server uses the very function of the `pml` package's gateway,
 * so a tool has one exposed name whichever side lists it.
 *
 * @module
 */
export { exposedName } from "../../../pml/src/gateway/names.ts";
