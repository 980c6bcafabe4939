/** Sandbox entry for the built-in std tools: the modules are imported statically. */
import * as filesystem from "../../../../registry/std/filesystem.ts";
import * as shell from "../../../../registry/std/shell.ts";
import { serveModules } from "./_runner.ts";

await serveModules({ filesystem, shell });
