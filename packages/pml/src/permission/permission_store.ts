import type { Config } from "../config/config.ts";
import { DEFAULT_PERMISSIONS } from "../config/defaults.ts";
import { writeHumanConfig } from "../config/human_write.ts";
import { readJsonObject, writeFileAtomic } from "../config/write_json.ts";
import { PmlError } from "../errors.ts";
import { checkPermission, type Decision, type Permissions } from "./patterns.ts";

/**
 * The live permissions of a session. `.pml.json` is the source of truth; `allowAlways` persists an
 * exact tool id to `permissions.allow` (atomic write, every other key of the file kept).
 */
export class PermissionStore {
  #permissions: Permissions;
  readonly #configPath: string;
  readonly #write: (text: string) => Promise<void>;
  #fromFile: boolean;

  /**
   * `write` stores the new `.pml.json` text (default: an atomic write; the gateway passes
   * `writeHumanConfig`, which keeps the workspace's trust). `fromFile`: the permissions come from
   * `.pml.json` (default), not from the built-in defaults.
   */
  constructor(
    permissions: Permissions,
    configPath: string,
    opts: { write?: (text: string) => Promise<void>; fromFile?: boolean } = {},
  ) {
    this.#permissions = permissions;
    this.#configPath = configPath;
    this.#write = opts.write ?? ((text) => writeFileAtomic(configPath, text));
    this.#fromFile = opts.fromFile ?? true;
  }

  get current(): Permissions {
    return this.#permissions;
  }

  /** True when the permissions come from `.pml.json`, false while the built-in defaults apply. */
  get fromFile(): boolean {
    return this.#fromFile;
  }

  check(toolId: string): Decision {
    return checkPermission(toolId, this.#permissions);
  }

  /**
   * Adds the exact `toolId` to `allow` (and removes it from `ask` where it is listed exactly).
   * Wildcards are left for the user to write. Creates `.pml.json` with the defaults if missing.
   */
  async allowAlways(toolId: string): Promise<void> {
    let file: Record<string, unknown>;
    try {
      file = await readJsonObject(this.#configPath) ?? { permissions: { ...DEFAULT_PERMISSIONS } };
    } catch (err) {
      throw new PmlError(
        "CONFIG_INVALID",
        `Cannot record "always" for "${toolId}": ${this.#configPath} is not valid JSON`,
        { cause: err },
      );
    }
    const perms = (file.permissions ?? {}) as Record<string, string[]>;
    const allow = [...(perms.allow ?? [])];
    if (!allow.includes(toolId)) allow.push(toolId);
    const ask = (perms.ask ?? []).filter((p) => p !== toolId);
    file.permissions = { ...perms, allow, ask, deny: perms.deny ?? [] };
    await this.#write(JSON.stringify(file, null, 2) + "\n");
    this.#fromFile = true;
    this.#permissions = Object.freeze({
      allow: [...this.#permissions.allow.filter((p) => p !== toolId), toolId],
      ask: this.#permissions.ask.filter((p) => p !== toolId),
      deny: this.#permissions.deny,
    });
  }
}

/**
 * The permissions of `config` as a store whose "always" rewrites `.pml.json` on a human's
 * decision: the new content stays trusted when the old one applied (`writeHumanConfig`).
 */
export function humanPermissionStore(config: Config): PermissionStore {
  return new PermissionStore(config.permissions, config.configPath, {
    write: (text) => writeHumanConfig(config.configPath, text, config),
    fromFile: config.permissionsFromFile,
  });
}
