/** Running short-lived helper tools (ctr, etcdctl) with a timeout and their stderr in the error (src/host/tools.ts). */
import { hostTools, ToolError, type ToolOptions } from "../host/tools.js";

export { ToolError, type ToolOptions };

export function runTool(args: string[], opts: ToolOptions = {}): Promise<string> {
  return hostTools.exec(args, opts);
}
