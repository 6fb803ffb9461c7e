/** bigint's least and greatest values, as parameters for an id range with no bound on that side. */
export const ID_MIN = '-9223372036854775808';
export const ID_MAX = '9223372036854775807';
