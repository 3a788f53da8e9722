CREATE TABLE `claim_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`site_id` text NOT NULL,
	`token_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	`key_id` text,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `claim_tokens_hash` ON `claim_tokens` (`token_hash`);--> statement-breakpoint
CREATE INDEX `claim_tokens_site` ON `claim_tokens` (`site_id`,`expires_at`);--> statement-breakpoint
ALTER TABLE `sites` ADD `ssh_port` integer;--> statement-breakpoint
CREATE UNIQUE INDEX `sites_ssh_port` ON `sites` (`ssh_port`) WHERE ssh_port IS NOT NULL AND status <> 'deleted';