// Type-checked, never run (`npm run contract`: openapi-typescript generates gen/openapi.d.ts
// from openapi.yaml, then `tsc --noEmit`): every call of the client sends what the contract
// accepts and reads what the contract answers. A field renamed, retyped or made required
// in openapi.yaml, or a client type that drifts from it, fails the test run here.
import type { components, operations } from "../gen/openapi.js";
import type { EventStream, PathdClient } from "../src/client.js";
import type { BatchError, BatchItem, ErrorBody, ErrorCode } from "../src/types.js";

type S = components["schemas"];
type C = PathdClient;

/** `A` can be sent where `B` is expected. */
type Assignable<A, B> = [A] extends [B] ? true : false;
/** Both ways. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Expect<T extends true> = T;

type Body<K extends keyof operations> = operations[K] extends {
  requestBody: { content: { "application/json": infer B } };
}
  ? B
  : never;
type Json<K extends keyof operations, Status extends number> = operations[K] extends {
  responses: { [P in Status]: { content: { "application/json": infer R } } };
}
  ? R
  : never;
type Query<K extends keyof operations> = NonNullable<operations[K]["parameters"]["query"]>;
type Header<K extends keyof operations> = NonNullable<operations[K]["parameters"]["header"]>;
type Arg<M extends keyof C, N extends number> = C[M] extends (...a: infer P) => unknown
  ? NonNullable<P[N]>
  : never;
type Answer<M extends keyof C> = C[M] extends (...a: never[]) => Promise<infer R> ? R : never;
type EventOf<M extends keyof C> = C[M] extends (...a: never[]) => EventStream<infer E> ? E : never;

// Sent: each call's request body is one the contract accepts.
export type Sent = [
  Expect<Assignable<Arg<"putMap", 1>, Body<"putMap">>>,
  Expect<Assignable<Arg<"patchMap", 1>, Body<"patchMap">>>,
  Expect<Assignable<Arg<"findPath", 1>, Body<"findPath">>>,
  Expect<Assignable<Arg<"findPaths", 1>, Body<"findPaths">>>,
  Expect<Assignable<Arg<"posthoc", 1>, Body<"findPathPosthoc">>>,
  Expect<Assignable<Arg<"createSubscription", 1>, Body<"createSubscription">>>,
  Expect<Assignable<{ position: Arg<"moveSubscription", 2> }, Body<"moveSubscription">>>,
  Expect<Assignable<Arg<"createFlowField", 1>, Body<"createFlowField">>>,
  Expect<Assignable<Arg<"planAgents", 1>, Body<"planAgents">>>,
  Expect<Assignable<Arg<"createLivePlan", 1>, Body<"planAgents">>>,
  Expect<Assignable<Arg<"reportPlanProgress", 2>, Body<"reportPlanProgress">>>,
  Expect<Assignable<Arg<"matrix", 1>, Body<"costMatrix">>>,
  Expect<Assignable<Arg<"los", 1>, Body<"lineOfSight">>>,
  Expect<Assignable<Arg<"random", 1>, Query<"randomReachable">>>,
  // Parameters: min_version on getMap, movement on putMap, the secrets' headers.
  Expect<Assignable<{ min_version: NonNullable<Arg<"getMap", 1>["minVersion"]> }, Query<"getMap">>>,
  Expect<Assignable<{ movement: NonNullable<Arg<"putMapText", 2>["movement"]> }, Query<"putMap">>>,
  Expect<Assignable<{ x: number; y: number; radius: NonNullable<Arg<"nearest", 2>["radius"]> }, Query<"nearestCell">>>,
  Expect<Assignable<{ "X-Subscription-Secret": Arg<"moveSubscription", 1> }, Header<"moveSubscription">>>,
  Expect<Assignable<{ "X-Subscription-Secret": Arg<"deleteSubscription", 1> }, Header<"deleteSubscription">>>,
  Expect<Assignable<{ "X-Flowfield-Secret": Arg<"deleteFlowField", 1> }, Header<"deleteFlowField">>>,
  Expect<Assignable<{ "X-Plan-Secret": Arg<"reportPlanProgress", 1> }, Header<"reportPlanProgress">>>,
  Expect<Assignable<{ "X-Plan-Secret": Arg<"deletePlan", 1> }, Header<"deletePlan">>>,
];

// Read: each answer the contract describes fits the type the client returns.
export type Read = [
  Expect<Assignable<Json<"healthz", 200>, Answer<"health">>>,
  Expect<Assignable<Json<"readyz", 200>, Answer<"ready">>>,
  Expect<Assignable<Json<"listMaps", 200>, Answer<"listMaps">>>,
  Expect<Assignable<Json<"getMap", 200>, Answer<"getMap">>>,
  Expect<Assignable<Json<"getMapCells", 200>, Answer<"getMapCells">>>,
  Expect<Assignable<Json<"nearestCell", 200>, Answer<"nearest">>>,
  Expect<Assignable<Json<"putMap", 200>, Answer<"putMap">["map"]>>,
  Expect<Assignable<Json<"putMap", 201>, Answer<"putMap">["map"]>>,
  Expect<Assignable<Json<"patchMap", 200>, Answer<"patchMap">>>,
  Expect<Assignable<Json<"findPath", 200>, Answer<"findPath">>>,
  Expect<Assignable<Json<"findPaths", 200>, Answer<"findPaths">>>,
  Expect<Assignable<Json<"createSubscription", 201>, Answer<"createSubscription">>>,
  Expect<Assignable<Json<"getSubscription", 200>, Answer<"getSubscription">>>,
  Expect<Assignable<Json<"moveSubscription", 200>, Answer<"moveSubscription">>>,
  Expect<Assignable<Json<"createFlowField", 201>, Answer<"createFlowField">>>,
  Expect<Assignable<Json<"getFlowField", 200>, Answer<"getFlowField">>>,
  Expect<Assignable<Json<"planAgents", 200>, Answer<"planAgents">>>,
  Expect<Assignable<Json<"planAgents", 201>, Answer<"createLivePlan">>>,
  Expect<Assignable<Json<"getPlan", 200>, Answer<"getPlan">>>,
  Expect<Assignable<Json<"reportPlanProgress", 200>, Answer<"reportPlanProgress">>>,
  Expect<Assignable<Json<"costMatrix", 200>, Answer<"matrix">>>,
  Expect<Assignable<Json<"lineOfSight", 200>, Answer<"los">>>,
  Expect<Assignable<Json<"randomReachable", 200>, Answer<"random">>>,
  // The batch items' discriminator: `status`, a result's outcome or `error`.
  Expect<Assignable<S["BatchError"], BatchError>>,
  Expect<Same<S["BatchItem"]["status"], BatchItem["status"]>>,
  // The events' data (typed per `reason` in the contract: a discriminated union of named
  // schemas, x-event-data of the streams) and the error body.
  Expect<Assignable<S["SubscriptionEvent"], EventOf<"subscriptionEvents">>>,
  Expect<Assignable<S["LivePlanEvent"], EventOf<"planEvents">>>,
  Expect<Same<S["SubscriptionEvent"]["reason"], EventOf<"subscriptionEvents">["reason"]>>,
  Expect<Same<S["FlowFieldEvent"]["reason"], EventOf<"flowFieldEvents">["reason"]>>,
  // (openapi-typescript's --array-length reads the cells' `prefixItems` plus `minItems: 4`
  // as four tuples in a row, so the cells are held against their prefix tuple.)
  Expect<Assignable<Omit<S["FlowFieldEvent"], "cells">, Omit<EventOf<"flowFieldEvents">, "cells">>>,
  Expect<Assignable<S["FlowFieldCell"][0], EventOf<"flowFieldEvents">["cells"][number]>>,
  Expect<Assignable<S["Error"], ErrorBody>>,
  // The client knows exactly the contract's error codes.
  Expect<Same<S["Error"]["error"]["code"], ErrorCode>>,
];
