export type Role = 'customer' | 'host' | 'operator';

export interface Actor {
  id: number;
  role: Role;
}

export const describeActor = (a: Actor) => `${a.role}:${a.id}`;
