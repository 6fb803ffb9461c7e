/**
 * The one error this folder throws for bad input. `field` names the part of the input at fault
 * ('spec', 'timeZone', 'minute', 'day-of-month', …) so an API can point at it, and `reason` is the
 * sentence without the field prefix.
 */
export class SpecError extends Error {
  override name = 'SpecError';
  readonly field: string;
  readonly reason: string;

  constructor(field: string, reason: string, options?: ErrorOptions) {
    super(`${field === 'spec' ? 'spec' : `${field} field`}: ${reason}`, options);
    this.field = field;
    this.reason = reason;
  }
}
