/**
 * zod schema of the whole v1alpha1 machine config document, with the TypeScript types consumers read.
 * The pieces live in ./schema/*.ts; field names are the upstream yaml tags, unknown keys are rejected.
 */
import * as z from "zod";
import { cluster } from "./schema/cluster.js";
import { machine } from "./schema/machine.js";
import { bool, str } from "./schema/primitives.js";

export const v1alpha1Schema = z.strictObject({
  version: str.optional(),
  debug: bool.optional(),
  persist: bool.optional(),
  machine: machine.optional(),
  cluster: cluster.optional(),
});

type Parsed = z.output<typeof v1alpha1Schema>;

export type MachineSection = NonNullable<Parsed["machine"]>;
export type ClusterSection = NonNullable<Parsed["cluster"]>;
export type NetworkSection = NonNullable<MachineSection["network"]>;
export type NetworkDevice = NonNullable<NetworkSection["interfaces"]>[number];
export type Vlan = NonNullable<NetworkDevice["vlans"]>[number];
export type InstallSection = NonNullable<MachineSection["install"]>;
export type KubeletSection = NonNullable<MachineSection["kubelet"]>;
export type CertAndKey = NonNullable<MachineSection["ca"]>;

/**
 * The typed v1alpha1 document. `machine` and `cluster` are always objects here (an absent or null section reads as
 * empty) so consumers can write `cfg.v1alpha1()?.machine.network?.hostname` without extra checks.
 */
export interface V1Alpha1Config extends Omit<Parsed, "machine" | "cluster"> {
  machine: MachineSection;
  cluster: ClusterSection;
}
