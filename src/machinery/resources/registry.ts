/**
 * The published resource types and namespaces. The COSI API serves only what is registered here:
 * anything else is "not supported", like Talos's access filter.
 */
import type { ResourceType } from "./resource.js";

export class TypeRegistry {
  private types = new Map<string, ResourceType>();
  private namespaces = new Map<string, string>();

  register<S>(t: ResourceType<S>): this {
    if (this.types.has(t.type)) throw new Error(`resource type ${t.type} registered twice`);
    this.types.set(t.type, t as ResourceType);
    return this;
  }

  registerNamespace(name: string, description: string): this {
    this.namespaces.set(name, description);
    return this;
  }

  get(type: string): ResourceType | undefined {
    return this.types.get(type);
  }

  all(): ResourceType[] {
    return [...this.types.values()].sort((a, b) => a.type.localeCompare(b.type));
  }

  hasNamespace(ns: string): boolean {
    return this.namespaces.has(ns);
  }

  allNamespaces(): [string, string][] {
    return [...this.namespaces].sort(([a], [b]) => a.localeCompare(b));
  }
}
