/** The /v1 resource routes beyond administration, one module per resource. */
import type { Api } from '../app.ts';
import { dashboardRoutes } from '../../dashboard/serve.ts';
import type { RouteDeps } from '../server.ts';
import { deadLetterRoutes } from './dead-letter.ts';
import { historyRoutes } from './history.ts';
import { jobBulkRoutes } from './jobs-bulk.ts';
import { jobRoutes } from './jobs.ts';
import { scheduleRoutes } from './schedules.ts';
import { workerRoutes } from './workers.ts';
import { whoamiRoutes } from './whoami.ts';
import { workflowRoutes } from './workflows.ts';

export type RouteModule = (app: Api, deps: RouteDeps) => void;

export const routeModules: RouteModule[] = [
  scheduleRoutes,
  jobRoutes,
  jobBulkRoutes,
  deadLetterRoutes,
  historyRoutes,
  workerRoutes,
  workflowRoutes,
  whoamiRoutes,
  dashboardRoutes,
];
