CREATE TABLE `site_env` (
	`site_id` text NOT NULL,
	`name` text NOT NULL,
	`value` text,
	`sealed` text,
	`secret` integer DEFAULT false NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`site_id`, `name`),
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
ALTER TABLE `deployments` ADD `source` text;--> statement-breakpoint
ALTER TABLE `deployments` ADD `commit` text;--> statement-breakpoint
ALTER TABLE `deployments` ADD `runtime` text;--> statement-breakpoint
ALTER TABLE `sites` ADD `runtime` text;--> statement-breakpoint
ALTER TABLE `sites` ADD `live_deployment_id` text;