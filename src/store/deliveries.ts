/**
 * The delivery worker's view of storage: claiming due deliveries under a lease and the guarded transitions
 * that complete them. Defined with the delivery loop (issue: delivery).
 */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface DeliveryStore {}
