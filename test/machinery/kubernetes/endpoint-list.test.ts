/** The merged control-plane endpoints (upstream k8s.EndpointList) and the etcd client endpoints built from them. */
import { describe, expect, it } from "vitest";
import { joinHostPort, mergedEndpoints } from "../../../src/machinery/kubernetes/endpoint-list.js";
import { controlPlaneEtcdEndpoints } from "../../../src/controllers/etcd/service.js";
import { CONTROLPLANE_NS, EndpointType } from "../../../src/machinery/resources/types/k8s-status.js";
import { newResource } from "../../../src/machinery/resources/resource.js";
import { InMemoryState } from "../../../src/state/inmem.js";

describe("control-plane endpoint list", () => {
  it("merges addresses in address order (IPv4 first, each once) and then host names", () => {
    const list = mergedEndpoints([
      { addresses: ["10.0.0.10", "fd00::2"], hosts: ["cp.example"] },
      { addresses: ["10.0.0.9", "10.0.0.10", "fd00:0::2"], hosts: [] },
      { addresses: ["not-an-ip"], hosts: ["a.example", "cp.example"] },
    ]);
    expect(list).toEqual(["10.0.0.9", "10.0.0.10", "fd00::2", "a.example", "cp.example"]);
    expect(list.map((h) => joinHostPort(h, 2379))).toEqual(["10.0.0.9:2379", "10.0.0.10:2379", "[fd00::2]:2379", "a.example:2379", "cp.example:2379"]);
  });

  it("gives etcd every Endpoints resource of `controlplane` on the client port", () => {
    const s = new InMemoryState();
    s.apply(newResource({ namespace: CONTROLPLANE_NS, type: EndpointType.type, id: "controlplane" }, { addresses: ["10.5.0.2"], hosts: [] }), "k8s.StaticEndpointController");
    s.apply(newResource({ namespace: CONTROLPLANE_NS, type: EndpointType.type, id: "kube-apiserver" }, { addresses: ["10.5.0.3", "10.5.0.2"], hosts: [] }), "k8s.EndpointController");
    expect(controlPlaneEtcdEndpoints(s, 2379)).toEqual(["10.5.0.2:2379", "10.5.0.3:2379"]);
    expect(controlPlaneEtcdEndpoints(new InMemoryState(), 2379)).toEqual([]);
  });
});
